//! Fuzzing the input side with proptest: the envelope parser and the line
//! reader must never panic, whatever bytes arrive, and must keep their
//! promises on the inputs they accept. `FUZZ_CASES` sets the number of
//! cases per property (default 1,000); for a long run:
//! `FUZZ_CASES=1000000 cargo test --release --test reliability fuzz`.

use inbox_kit_runtime::lines::{Line, Lines};
use proptest::prelude::*;
use proptest::test_runner::Config;

use {{crate_name}}::envelope::parse_line;
use {{crate_name}}::event::{Event, MAX_AMOUNT, PaymentCaptured};

fn config() -> Config {
    let cases = std::env::var("FUZZ_CASES").map_or(1_000, |value| {
        value.parse().expect("FUZZ_CASES must be a whole number")
    });
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// JSON-shaped text built from the envelope's own vocabulary, so that the
/// cases reach past the JSON syntax check into the field checks.
fn json_like() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("id"),
        Just("type"),
        Just("payload"),
        Just("account"),
        Just("amount"),
        Just("other")
    ];
    let scalar = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("\"payment.captured\"".to_owned()),
        "\"[^\"\\\\]{0,12}\"".prop_map(|s| s),
        "-?[0-9]{1,25}(\\.[0-9]{1,3})?".prop_map(|s| s),
        Just("[]".to_owned()),
    ];
    let value = scalar.prop_recursive(2, 16, 4, move |inner| {
        prop::collection::vec((key.clone(), inner), 0..4).prop_map(|fields| {
            let body: Vec<_> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            ["{", &body.join(","), "}"].concat()
        })
    });
    (value, prop::option::of("[ ,}\\]\"]{1,2}"))
        .prop_map(|(text, junk)| text + &junk.unwrap_or_default())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fuzz_the_parser_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_line::<Event>(&bytes);
    }

    #[test]
    fn fuzz_the_parser_never_panics_on_json_like_text(text in json_like()) {
        let _ = parse_line::<Event>(text.as_bytes());
    }

    #[test]
    fn fuzz_valid_envelopes_parse_to_their_message(
        id in "[a-zA-Z0-9._:-]{1,200}",
        account in any::<i64>(),
        amount in 1..=MAX_AMOUNT,
    ) {
        let line = serde_json::json!({
            "id": id,
            "type": "payment.captured",
            "payload": { "account": account, "amount": amount },
            "headers": { "trace": "ignored" },
        })
        .to_string();
        let message = parse_line::<Event>(line.as_bytes()).expect("a valid envelope");
        prop_assert_eq!(message.id.as_str(), id.as_str());
        prop_assert_eq!(message.event, Event::PaymentCaptured(PaymentCaptured { account, amount }));
    }

    #[test]
    fn fuzz_the_line_reader_accounts_for_every_byte(
        input in prop::collection::vec(prop_oneof![4 => any::<u8>(), 1 => Just(b'\n')], 0..2_000),
        limit in 1usize..64,
    ) {
        let mut lines = Lines::with_capacity(input.as_slice(), 7, limit);
        let mut seen = 0;
        while let Some((_, line, size)) = lines.next_line().expect("reading a slice cannot fail") {
            if let Line::Text(text) = line {
                prop_assert!(text.len() <= limit);
            }
            seen += size;
        }
        prop_assert_eq!(seen, input.len());
    }
}
