//! Numbers as the benchmarks report them: medians of repeated runs, rates
//! written with thousands separators so tables read at a glance, and the
//! broker benchmarks' two `consume` rows. Every project's benchmarks print
//! their tables with these, so the figures read the same on every variant.

use inbox_kit_runtime::handler::Registry;
use inbox_kit_runtime::pipeline::Options;

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
pub fn consume_rows<R: Registry>(
    workers: usize,
    messages: usize,
    repeats: usize,
    baseline: f64,
    mut seconds: impl FnMut(Options<R>) -> f64,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_separated_by_commas_after_rounding() {
        assert_eq!(thousands(0.4), "0");
        assert_eq!(thousands(999.5), "1,000");
        assert_eq!(thousands(1_234_567.0), "1,234,567");
        assert_eq!(thousands(12_345.0), "12,345");
    }

    #[test]
    fn the_median_is_the_middle_value_whatever_the_order() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
    }
}
