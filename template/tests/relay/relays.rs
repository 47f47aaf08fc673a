//! Two relays at once never send the same row at the same time: on
//! PostgreSQL each takes its rows with `FOR UPDATE SKIP LOCKED`; on SQLite a
//! second relay is refused (one relay per database).

use std::collections::BTreeSet;
use std::time::Duration;

use {{crate_name}}::relay::{Outgoing, RelayPolicy, Sent, Sink, Until, relay};
use {{crate_name}}::stop::Stop;
use {{crate_name}}::store::Store;

use crate::{Recorder, key_of, keys_of, outbox_with};

/// A sink that takes its time, so that two relays overlap.
struct Slow(Recorder);

impl Sink for Slow {
    fn send(&mut self, outgoing: &Outgoing) -> Sent {
        std::thread::sleep(Duration::from_millis(2));
        self.0.send(outgoing)
    }
}

#[test]
fn two_relays_at_once_never_send_a_row_twice() {
    let fixture = outbox_with(50);
    let database = fixture.database();
    let mut first = database.relay_queue().unwrap();
    let mut second = match database.relay_queue() {
        Ok(second) => second,
        Err(refused) => {
            assert!(refused.to_string().contains("another relay"), "{refused}");
            println!("one relay per database: {refused}");
            return;
        }
    };
    let recorder = Recorder::default();
    let (mut one, mut two) = (Slow(recorder.clone()), Slow(recorder.clone()));
    let (stop, policy) = (Stop::default(), RelayPolicy::default());
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| relay(&mut first, &mut one, 5, policy, Until::Done, &stop, false));
        let b = scope.spawn(|| relay(&mut second, &mut two, 5, policy, Until::Done, &stop, false));
        (a.join().unwrap().unwrap(), b.join().unwrap().unwrap())
    });
    println!("relays sent {} and {}", a.sent, b.sent);
    assert!(a.sent > 0 && b.sent > 0, "the two relays did not overlap");
    let keys: Vec<String> = recorder.lines().iter().map(|line| key_of(line)).collect();
    assert_eq!(keys.len(), 100, "a row was sent twice");
    assert_eq!(keys.into_iter().collect::<BTreeSet<_>>(), keys_of(&fixture));
}
