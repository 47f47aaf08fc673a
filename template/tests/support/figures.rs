//! Numbers as the benchmarks report them: medians of repeated runs, and
//! rates written with thousands separators so tables read at a glance.

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
