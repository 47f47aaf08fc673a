//! Two relays at once never send the same row at the same time: on
//! PostgreSQL each takes its rows with `FOR UPDATE SKIP LOCKED`; on SQLite a
//! second relay is refused (one relay per database).

use std::collections::BTreeSet;
use std::sync::Barrier;

use {{crate_name}}::handlers::Notification;
use {{crate_name}}::meter::Unmetered;
use {{crate_name}}::progress::Progress;
use {{crate_name}}::relay::{Outgoing, RelayPolicy, Sent, Sink, Until, Watch, relay};
use {{crate_name}}::stop::Stop;
use {{crate_name}}::store::Store;

use crate::{Recorder, key_of, keys_of, outbox_with};

/// A sink whose first send waits for the other relay's first send: both
/// relays then hold a batch at the same time, whatever the scheduler does.
struct MeetsTheOther<'a> {
    recorder: Recorder,
    meeting: Option<&'a Barrier>,
}

impl Sink<Notification> for MeetsTheOther<'_> {
    fn send(&mut self, outgoing: &Outgoing) -> Sent {
        if let Some(meeting) = self.meeting.take() {
            meeting.wait();
        }
        self.recorder.send(outgoing)
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
    let meeting = Barrier::new(2);
    let meet = || MeetsTheOther {
        recorder: recorder.clone(),
        meeting: Some(&meeting),
    };
    let (mut one, mut two) = (meet(), meet());
    let (stop, policy) = (Stop::default(), RelayPolicy::default());
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| {
            relay(
                &mut first,
                &mut one,
                5,
                policy,
                Watch {
                    until: Until::Done,
                    stop: &stop,
                    progress: &Progress::default(),
                    meter: &Unmetered,
                },
            )
        });
        let b = scope.spawn(|| {
            relay(
                &mut second,
                &mut two,
                5,
                policy,
                Watch {
                    until: Until::Done,
                    stop: &stop,
                    progress: &Progress::default(),
                    meter: &Unmetered,
                },
            )
        });
        (a.join().unwrap().unwrap(), b.join().unwrap().unwrap())
    });
    println!("relays sent {} and {}", a.sent, b.sent);
    assert!(a.sent > 0 && b.sent > 0, "the two relays did not overlap");
    let keys: Vec<String> = recorder.lines().iter().map(|line| key_of(line)).collect();
    assert_eq!(keys.len(), 100, "a row was sent twice");
    assert_eq!(keys.into_iter().collect::<BTreeSet<_>>(), keys_of(&fixture));
}
