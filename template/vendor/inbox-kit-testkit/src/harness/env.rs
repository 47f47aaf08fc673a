//! Knobs from the environment, a small seeded random generator, and the
//! clock: one helper each, shared by every test.

use std::time::SystemTime;

/// A whole number from the environment variable `name`, or `default` when
/// it is unset. Anything else is a mistake worth stopping for.
pub fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Err(_) => default,
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, not {value:?}")),
    }
}

/// Workers of the parallel scenario: `STRESS_WORKERS`, default 4.
pub fn stress_workers() -> usize {
    env_number("STRESS_WORKERS", 4) as usize
}

/// Messages of the parallel scenario: `STRESS_MESSAGES`, default 50.
pub fn stress_messages() -> usize {
    env_number("STRESS_MESSAGES", 50) as usize
}

/// Milliseconds since the Unix epoch, as the inbox stores them.
pub fn now_millis() -> i64 {
    inbox_kit_runtime::inbox::unix_millis(SystemTime::now())
}

/// A small deterministic generator (xorshift), so that a failing run can be
/// replayed from its printed seed.
#[derive(Clone, Debug)]
pub struct Prng(u64);

impl Prng {
    /// Seeded from the environment variable `name` when it is set (to replay
    /// a run), from the clock otherwise. Prints the seed either way.
    pub fn from_env(name: &str) -> Self {
        let seed = match std::env::var(name) {
            Ok(_) => env_number(name, 0),
            Err(_) => now_millis().unsigned_abs() ^ u64::from(std::process::id()) << 32,
        };
        println!("random seed: {name}={seed}");
        Self::new(seed)
    }

    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    /// A number in `0..below`.
    pub fn below(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_replays_the_same_numbers_within_bounds() {
        let draw = |seed| {
            let mut prng = Prng::new(seed);
            (0..64).map(|_| prng.below(10)).collect::<Vec<_>>()
        };
        let numbers = draw(42);
        assert_eq!(numbers, draw(42));
        assert_ne!(numbers, draw(44));
        assert_eq!(
            numbers,
            draw(43),
            "the low bit is always set: 42 and 43 are one seed"
        );
        assert!(numbers.iter().all(|&n| n < 10), "{numbers:?}");
        let mut distinct = numbers.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > 5, "too few distinct numbers: {numbers:?}");
        assert_eq!(Prng::new(7).below(0), 0, "below(0) is read as below(1)");
    }

    #[test]
    fn a_seed_gives_the_numbers_it_always_gave() {
        // A seed printed by a failing run replays it, also after the kit
        // was upgraded: the generator never changes its sequence.
        let mut prng = Prng::new(42);
        let numbers: Vec<u64> = (0..8).map(|_| prng.below(1000)).collect();
        assert_eq!(numbers, GOLDEN);
    }

    /// The first eight numbers below 1,000 of seed 42.
    const GOLDEN: [u64; 8] = [435, 150, 539, 429, 191, 570, 594, 455];

    #[test]
    fn the_parallel_scenario_is_four_workers_and_fifty_messages_by_default() {
        if std::env::var_os("STRESS_WORKERS").is_none() {
            assert_eq!(stress_workers(), 4);
        }
        if std::env::var_os("STRESS_MESSAGES").is_none() {
            assert_eq!(stress_messages(), 50);
        }
    }

    #[test]
    fn a_number_knob_reads_its_variable_or_its_default() {
        assert_eq!(env_number("INBOX_KIT_TESTKIT_UNSET_KNOB", 17), 17);
        assert!(
            now_millis() > 1_700_000_000_000,
            "the clock is in milliseconds"
        );
    }
}
