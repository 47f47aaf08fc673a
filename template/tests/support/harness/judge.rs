//! A scenario's run on this project's events. The judge itself (what
//! "effectively once" means, the once-only route, reading back what a
//! scenario left behind) is the test kit's
//! (`inbox_kit_testkit::harness::judge`).

use {{crate_name}}::event::Event;

/// A scenario's run on this project's events.
pub type Play<State> = inbox_kit_testkit::harness::Play<Event, State>;
