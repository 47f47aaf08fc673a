//! Numbers as the benchmarks report them: medians of repeated runs, and
//! rates written with thousands separators so tables read at a glance.

use {{crate_name}}::pipeline::Options;

/// The middle value (the upper one of the two middles for an even count).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// `rate` rounded to a whole number, with commas between thousands.
pub fn thousands(rate: f64) -> String {
    let whole = rate.round() as u64;
    let text = whole.to_string();
    let mut out = String::new();
    for (index, digit) in text.chars().enumerate() {
        if index > 0 && (text.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The broker benchmarks' two `consume` rows for `workers`: one
/// transaction per delivery, then batches of 256. Each is the median rate
/// of `repeats` runs (`seconds` consumes all `messages` with the options
/// given and says how long it took), with its ratio to `baseline`.
pub fn consume_rows(
    workers: usize,
    messages: usize,
    repeats: usize,
    baseline: f64,
    mut seconds: impl FnMut(Options) -> f64,
) {
    for (label, batch_size) in [
        ("consume, one transaction per delivery", 1),
        ("consume, batched (256)", 256),
    ] {
        let rate = median(
            (0..repeats)
                .map(|_| {
                    messages as f64
                        / seconds(Options {
                            workers,
                            batch_size,
                            ..Options::default()
                        })
                })
                .collect(),
        );
        println!(
            "| {label} | {workers} | {} | {:.2}x |",
            thousands(rate),
            rate / baseline
        );
    }
}
