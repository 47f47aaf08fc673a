//! The judge: what "effectively once" means, checked after a scenario.
//!
//! A scenario reports what it delivered and what it left behind (a
//! [`Play`], read from the fixture by [`observe`]); the judge holds it
//! against two independent expectations ([`Expected::of`]): the subject's
//! hand-written [`Model`], and each distinct message applied once,
//! straight through the handler, to a fresh database (the project's
//! [`Fixture::scratch`]). What counts as a broken promise is decided here,
//! in the kit, where a project's edits do not reach it.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Debug;

use inbox_kit_runtime::handler::Refused;
use inbox_kit_runtime::inbox::DeadLetter;
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::pipeline::Summary;

use super::project::{Fixture, Project};
use super::subject::{EventOf, Model, Subject};

/// What a scenario left behind for one consumer.
#[derive(Debug)]
pub struct Observed<State> {
    pub outcomes: Summary,
    pub inbox_rows: usize,
    pub state: State,
    /// The consumer's dead letters, refused ones included.
    pub dead_letters: Vec<DeadLetter>,
    /// Failures counted for the consumer and not yet dead-lettered.
    pub attempts: u64,
}

impl<State> Observed<State> {
    /// The ids of the messages the handler refused (dead-lettered at once).
    pub fn refused(&self) -> BTreeSet<String> {
        self.dead_letters
            .iter()
            .filter(|letter| letter.refused)
            .map(|letter| letter.message_id.clone())
            .collect()
    }
}

/// A scenario's run, for events `E`: what it delivered and what it left
/// behind.
#[derive(Debug)]
pub struct Play<E, State> {
    /// Which scenario ran, through which inbox.
    pub scenario: String,
    /// The consumer it ran for.
    pub consumer: String,
    /// The distinct messages the scenario delivered (each possibly many
    /// times).
    pub messages: Vec<Message<E>>,
    /// How many deliveries were made in all.
    pub deliveries: u64,
    /// What was seen at named points before the end, in order.
    pub steps: Vec<(String, Observed<State>)>,
    /// What was seen at the end.
    pub observed: Observed<State>,
}

/// A play of subject `S`: its project's events, its state.
pub type PlayOf<S> = Play<EventOf<S>, <S as Subject>::State>;

impl<E, State> Play<E, State> {
    /// What was seen at the step named `name`.
    pub fn step(&self, name: &str) -> &Observed<State> {
        self.steps
            .iter()
            .find(|(step, _)| step == name)
            .map(|(_, observed)| observed)
            .unwrap_or_else(|| panic!("{} has no step {name:?}", self.scenario))
    }

    /// A violation of this play, saying `what`.
    pub fn violation(&self, what: &str) -> Violation {
        Violation(format!("{} [{}]: {what}", self.scenario, self.consumer))
    }
}

impl<E: Clone, State: PartialEq + Debug> Play<E, State> {
    /// Judges the run: state and refusals equal to the model and to
    /// once-only, one inbox row per distinct message, no failures, each
    /// message applied or refused once and every other delivery a
    /// duplicate.
    pub fn judge<S: Subject<State = State>>(self, subject: &S) -> Result<Self, Violation>
    where
        S::Project: Project<Event = E>,
    {
        let expected = Expected::of(subject, &self.messages)?;
        self.judge_against(&expected)
    }

    /// Judges the run against `expected` (computed once for the messages,
    /// possibly for several plays of them): state and refusals equal to
    /// both routes, one inbox row per distinct message, no failures, each
    /// message applied or refused once and every other delivery a
    /// duplicate.
    pub fn judge_against(self, expected: &Expected<State>) -> Result<Self, Violation> {
        let distinct = distinct(&self.messages).len() as u64;
        let refused = expected.model.refused.len() as u64;
        let expected_outcomes = Summary {
            applied: distinct - refused,
            refused,
            duplicate: self.deliveries - distinct,
            ..Summary::default()
        };
        let observed = &self.observed;
        let mut problems = expected.problems(&observed.state, &observed.refused());
        if observed.inbox_rows as u64 != distinct {
            problems.push(format!(
                "inbox holds {} rows for {distinct} distinct messages",
                observed.inbox_rows
            ));
        }
        if observed.outcomes != expected_outcomes {
            problems.push(format!(
                "outcomes {}, expected {expected_outcomes}",
                observed.outcomes
            ));
        }
        if problems.is_empty() {
            return Ok(self);
        }
        Err(self.violation(&problems.join("; ")))
    }
}

/// A broken promise, with enough detail to see why.
///
/// `Debug` shows the text after `violation: `, so that `.expect(...)` on a
/// judged result reads well, and so that a project's
/// `scripts/red-before-green.sh` counts the panic as a failed assertion
/// (the harness judged the state), not as a set-up that went wrong.
pub struct Violation(pub String);

impl Debug for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "violation: {}", self.0)
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a subject must end in after some distinct messages were each
/// applied once, by two independent routes.
#[derive(Debug)]
pub struct Expected<State> {
    /// From the subject's model (no database, no handler).
    pub model: Model<State>,
    /// From applying each message once, straight through the handler, to
    /// a fresh database (no inbox).
    pub once_only: Model<State>,
}

impl<State: PartialEq + Debug> Expected<State> {
    /// Both expectations for `applied` (repeats of an id are ignored), in
    /// this order.
    pub fn of<S: Subject<State = State>>(
        subject: &S,
        applied: &[Message<EventOf<S>>],
    ) -> Result<Self, Violation> {
        let distinct = distinct(applied);
        Ok(Self {
            model: subject.model(&distinct),
            once_only: once_only(subject, &distinct)?,
        })
    }

    /// The ids the model refuses.
    pub fn refused(&self) -> BTreeSet<String> {
        self.model.refused.keys().cloned().collect()
    }

    /// What is wrong with `state` and the `refused` ids, if anything.
    pub fn problems(&self, state: &State, refused: &BTreeSet<String>) -> Vec<String> {
        let mut problems = Vec::new();
        for (route, expected) in [
            ("the model", &self.model),
            ("applying each message once", &self.once_only),
        ] {
            if *state != expected.state {
                problems.push(state_against(state, route, &expected.state));
            }
            let must_refuse: BTreeSet<String> = expected.refused.keys().cloned().collect();
            if *refused != must_refuse {
                problems.push(format!(
                    "the handler refused {refused:?}, {route} refuses {:?}",
                    expected.refused
                ));
            }
        }
        problems
    }
}

/// `state` against what `route` gives, for a violation: both in full when
/// they are short, otherwise a diff of their pretty forms with a little
/// context (a state of a thousand rows that differs in two shows those
/// two).
pub fn state_against<T: Debug>(state: &T, route: &str, expected: &T) -> String {
    const SHORT: usize = 600;
    const MOST_LINES: usize = 60;
    let (ours, theirs) = (format!("{state:?}"), format!("{expected:?}"));
    if ours.len() + theirs.len() <= SHORT {
        return format!("state is {ours}, {route} gives {theirs}");
    }
    let (ours, theirs) = (format!("{state:#?}\n"), format!("{expected:#?}\n"));
    let diff = similar::TextDiff::from_lines(&ours, &theirs)
        .unified_diff()
        .context_radius(2)
        .header("the state", route)
        .to_string();
    let lines: Vec<&str> = diff.lines().collect();
    let shown = lines.len().min(MOST_LINES);
    let more = if lines.len() > shown {
        format!("\n... and {} more lines of the diff", lines.len() - shown)
    } else {
        String::new()
    };
    format!(
        "state differs from what {route} gives:\n{}{more}",
        lines[..shown].join("\n")
    )
}

/// The subject's state in `fixture`, read on the fixture's connection.
pub fn state_of<S: Subject>(fixture: &<S::Project as Project>::Fixture, subject: &S) -> S::State {
    fixture.with_tables(|tables| subject.state(tables))
}

/// What [`assert_applied_once`] would complain about (nothing: the state
/// is each message applied once).
pub fn applied_once_problems<S: Subject>(
    fixture: &<S::Project as Project>::Fixture,
    subject: &S,
    applied: &[Message<EventOf<S>>],
) -> Vec<String> {
    let consumer = subject.handler().consumer();
    let refused = fixture
        .dead_letters()
        .into_iter()
        .filter(|letter| letter.consumer == consumer && letter.refused)
        .map(|letter| letter.message_id)
        .collect();
    Expected::of(subject, applied)
        .unwrap_or_else(|violation| panic!("{violation:?}"))
        .problems(&state_of(fixture, subject), &refused)
}

/// Asserts that `subject`'s state in `fixture`, and the messages it
/// refused, are each distinct message of `applied` applied once, judged by
/// the subject's model and by the once-applied oracle; the panic lists
/// what differs.
#[track_caller]
pub fn assert_applied_once<S: Subject>(
    fixture: &<S::Project as Project>::Fixture,
    subject: &S,
    applied: &[Message<EventOf<S>>],
) {
    let problems = applied_once_problems(fixture, subject, applied);
    assert!(
        problems.is_empty(),
        "{} is not each message applied once: {}",
        subject.handler().consumer(),
        problems.join("; ")
    );
}

/// Applies `messages` once each, in order, straight through the handler to
/// an empty database, each under a savepoint: a message the handler
/// refuses may have written before refusing, and that is rolled back.
fn once_only<S: Subject>(
    subject: &S,
    messages: &[Message<EventOf<S>>],
) -> Result<Model<S::State>, Violation> {
    let handler = subject.handler();
    <<S::Project as Project>::Fixture as Fixture<S::Project>>::scratch(|scratch| {
        let mut seeded = Ok(());
        scratch.read(&mut |tables| seeded = subject.seed(tables));
        seeded.expect("seed");
        let mut refused = BTreeMap::new();
        for message in messages {
            let applied = scratch.attempt(&mut |tables| handler.apply(tables, message));
            let Err(error) = applied else {
                continue;
            };
            match error.downcast::<Refused>() {
                Ok(refusal) => {
                    refused.insert(message.id.to_string(), refusal.0);
                }
                Err(error) => {
                    return Err(Violation(format!(
                        "`{}` fails even when each message is applied once to a fresh database: {error}",
                        handler.consumer()
                    )));
                }
            }
        }
        let mut state = None;
        scratch.read(&mut |tables| state = Some(subject.state(tables)));
        let state = state.expect("read the state").expect("read the state");
        Ok(Model { state, refused })
    })
}

/// Reads what `fixture` holds for `subject` after `outcomes`.
pub fn observe<S: Subject>(
    fixture: &<S::Project as Project>::Fixture,
    subject: &S,
    outcomes: Summary,
) -> Observed<S::State> {
    let consumer = subject.handler().consumer();
    Observed {
        outcomes,
        inbox_rows: fixture.inbox_rows(consumer),
        state: state_of(fixture, subject),
        dead_letters: fixture
            .dead_letters()
            .into_iter()
            .filter(|letter| letter.consumer == consumer)
            .collect(),
        attempts: fixture.failures_counted(consumer),
    }
}

/// The messages with repeated ids left out, in first-seen order.
pub fn distinct<E: Clone>(messages: &[Message<E>]) -> Vec<Message<E>> {
    let mut seen = HashSet::new();
    messages
        .iter()
        .filter(|message| seen.insert(message.id.clone()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use inbox_kit_runtime::message::MessageId;

    use super::*;

    fn message(id: &str) -> Message<u32> {
        Message {
            id: MessageId::new(id).unwrap(),
            event: 1,
            trace_parent: None,
        }
    }

    fn letter(id: &str, refused: bool) -> DeadLetter {
        DeadLetter {
            consumer: "c".to_owned(),
            message_id: id.to_owned(),
            event_type: "t".to_owned(),
            payload: "{}".to_owned(),
            error: "no".to_owned(),
            attempts: 1,
            refused,
            dead_at: 0,
        }
    }

    /// Three deliveries of `a` and `b` (`a` twice), which the model says
    /// give state 2 with `b` refused; the observation says what the
    /// consumer did.
    fn play(observed: Observed<u32>) -> Play<u32, u32> {
        Play {
            scenario: "twice".to_owned(),
            consumer: "c".to_owned(),
            messages: vec![message("a"), message("b"), message("a")],
            deliveries: 3,
            steps: Vec::new(),
            observed,
        }
    }

    fn expected() -> Expected<u32> {
        let model = Model {
            state: 2,
            refused: BTreeMap::from([("b".to_owned(), "why".to_owned())]),
        };
        Expected {
            once_only: model.clone(),
            model,
        }
    }

    /// What a consumer that did it right leaves behind.
    fn right() -> Observed<u32> {
        Observed {
            outcomes: Summary {
                applied: 1,
                refused: 1,
                duplicate: 1,
                ..Summary::default()
            },
            inbox_rows: 2,
            state: 2,
            dead_letters: vec![letter("b", true), letter("x", false)],
            attempts: 0,
        }
    }

    /// A change to what a right consumer leaves behind.
    type Change = fn(&mut Observed<u32>);

    fn verdict(change: impl FnOnce(&mut Observed<u32>)) -> Result<(), String> {
        let mut observed = right();
        change(&mut observed);
        play(observed)
            .judge_against(&expected())
            .map(drop)
            .map_err(|violation| violation.to_string())
    }

    #[test]
    fn a_run_that_kept_the_promise_passes() {
        assert_eq!(verdict(|_| ()), Ok(()));
    }

    #[test]
    fn each_broken_count_is_a_violation_that_names_it() {
        let cases: [(&str, Change); 7] = [
            ("state is 3", |o| o.state = 3),
            ("inbox holds 3 rows", |o| o.inbox_rows = 3),
            ("inbox holds 1 rows", |o| o.inbox_rows = 1),
            ("outcomes", |o| o.outcomes.duplicate = 0),
            ("outcomes", |o| o.outcomes.failed = 1),
            ("outcomes", |o| o.outcomes.applied = 2),
            ("the handler refused {}", |o| o.dead_letters.clear()),
        ];
        for (said, change) in cases {
            let violation = verdict(change).expect_err(said);
            assert!(
                violation.starts_with("twice [c]: ") && violation.contains(said),
                "{violation}"
            );
        }
    }

    #[test]
    fn each_route_is_held_against_the_state_on_its_own() {
        let mut expected = expected();
        expected.once_only.state = 5;
        let problems = expected.problems(&2, &expected.refused());
        assert_eq!(problems, ["state is 2, applying each message once gives 5"]);
        let mut expected = self::expected();
        expected.model.refused.clear();
        let problems = expected.problems(&2, &BTreeSet::from(["b".to_owned()]));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("the model refuses {}"), "{problems:?}");
    }

    #[test]
    fn only_refused_letters_count_as_refusals() {
        assert_eq!(right().refused(), BTreeSet::from(["b".to_owned()]));
    }

    #[test]
    fn distinct_keeps_the_first_of_each_id_in_order() {
        let kept = distinct(&[message("b"), message("a"), message("b"), message("c")]);
        let ids: Vec<&str> = kept.iter().map(|message| message.id.as_str()).collect();
        assert_eq!(ids, ["b", "a", "c"]);
    }

    #[test]
    fn a_long_state_is_shown_as_a_diff_of_what_differs() {
        let expected: Vec<u32> = (0..500).collect();
        let mut state = expected.clone();
        state[250] = 9999;
        let shown = state_against(&state, "the model", &expected);
        assert!(
            shown.starts_with("state differs from what the model gives:"),
            "{shown}"
        );
        assert!(
            shown.contains("-    9999,") && shown.contains("+    250,"),
            "{shown}"
        );
        assert!(shown.lines().count() < 20, "{shown}");
        assert_eq!(state_against(&1, "r", &2), "state is 1, r gives 2");
    }

    #[test]
    fn every_delivery_past_the_first_of_a_message_counts_as_a_duplicate() {
        let mut play = play(right());
        play.messages
            .extend([message("a"), message("b"), message("a")]);
        play.deliveries = 6;
        play.observed.outcomes.duplicate = 4;
        play.judge_against(&expected())
            .expect("six deliveries of two messages");
    }

    #[test]
    fn a_violation_reads_as_one() {
        let violation = Violation("what broke".to_owned());
        assert_eq!(format!("{violation:?}"), "violation: what broke");
        assert_eq!(violation.to_string(), "what broke");
    }

    #[test]
    fn a_state_that_fits_on_a_line_is_shown_whole() {
        let (ours, theirs) = ("x".repeat(40), "y".repeat(40));
        assert_eq!(
            state_against(&ours, "r", &theirs),
            format!("state is {ours:?}, r gives {theirs:?}")
        );
    }

    #[test]
    fn a_diff_too_long_to_show_says_how_much_more_there_is() {
        let expected: Vec<u32> = (0..500).collect();
        let state: Vec<u32> = (1000..1500).collect();
        let shown = state_against(&state, "the model", &expected);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(
            lines.len(),
            62,
            "a head line, 60 of the diff, the rest counted"
        );
        assert!(
            lines[61].starts_with("... and ") && lines[61].ends_with(" more lines of the diff"),
            "{}",
            lines[61]
        );
        let short: Vec<u32> = (0..200).collect();
        let mut one_off = short.clone();
        one_off[100] = 7;
        let shown = state_against(&one_off, "the model", &short);
        assert!(!shown.contains("more lines"), "{shown}");
    }

    #[test]
    fn a_step_is_found_by_its_name() {
        let mut play = play(right());
        play.steps.push((
            "first".to_owned(),
            Observed {
                state: 7,
                ..right()
            },
        ));
        assert_eq!(play.step("first").state, 7);
        let missing = std::panic::catch_unwind(|| play.step("second").state);
        assert!(missing.is_err());
    }
}
