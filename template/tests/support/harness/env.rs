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
    {{crate_name}}::inbox::unix_millis(SystemTime::now())
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
