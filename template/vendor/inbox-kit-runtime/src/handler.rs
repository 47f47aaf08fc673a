//! The contract between the inbox and business code, and what every
//! handler shares whatever its events: the error it returns, its final
//! "no" to a message, and the rules for a consumer's name (the first half
//! of the inbox key), with which consumers may run together.
//!
//! A consumer is two impls: [`Subscriber`] (its name and the events it
//! wants) and [`Handler`] (what it does). The handler is generic over the
//! tables it is handed (`T`): it names the trait of its own tables as a
//! bound (`impl<T: Ledger + ?Sized> Handler<Event, T> for Debit`), so it
//! can reach those and nothing else,
//! and it never names the project's union of every consumer's tables. The
//! project registers it as `dyn for<'t> Handler<Event, dyn Tables + 't>`,
//! and that union depends on the handlers, never the other way round.

use crate::message::Message;

/// Who a consumer is and which events it wants: the half of a
/// [`Handler`] that does not depend on its tables, so that it can be asked
/// without naming them (`Debit.consumer()`).
pub trait Subscriber<E>: Send + Sync {
    /// The consumer's name. Two consumers that receive the same message
    /// both apply it, because the inbox key is (consumer, message id).
    /// Must match [`is_valid_consumer_name`] and never change once
    /// messages were processed: renaming a consumer makes every old
    /// message look new.
    fn consumer(&self) -> &'static str;

    /// Whether this consumer wants the event at all.
    fn subscribes_to(&self, event: &E) -> bool;
}

/// One consumer of events `E`, applying them to tables `T`.
pub trait Handler<E, T: ?Sized>: Subscriber<E> {
    /// Applies the message's business effect.
    ///
    /// `tables` works inside the delivery's transaction: everything done
    /// through it commits or rolls back with the inbox row. Do not call
    /// anything that cannot be rolled back (mail, HTTP): write an outbox
    /// row instead. Refuse a message that can never apply with
    /// [`Refused`]; pass a [`crate::storage::StorageError`] from `tables`
    /// on as it is (`?`), so that a database fault is told apart.
    fn apply(&self, tables: &mut T, message: &Message<E>) -> Result<(), HandlerError>;

    /// This handler's set-based path, if it has one (see [`SetBased`]).
    /// Without one (the default) the inbox applies its deliveries one at a
    /// time, which is always right.
    fn set_based(&self) -> Option<&dyn SetBased<E, T>> {
        None
    }
}

/// A handler that can apply many messages in a few statements.
///
/// On a database server every statement is a round trip, so a batch of 256
/// deliveries applied one at a time waits for hundreds of answers in turn;
/// applied together it waits for one or two. The inbox hands
/// [`SetBased::apply_all`] the deliveries of a batch that are new, in their
/// order, under a savepoint of their own. If it returns an error, for
/// whatever reason, the inbox rolls all of it back and applies those
/// deliveries one at a time through [`Handler::apply`], so the one that
/// fails fails alone and its siblings apply once. So `apply_all` need not
/// find out which message was at fault; it must only never report success
/// for a message it did not apply (a payment skipped because its account
/// is missing is an error, not a smaller batch).
pub trait SetBased<E, T: ?Sized>: Send + Sync {
    /// Applies every message's business effect, as [`Handler::apply`]
    /// would one after another in this order, or returns an error.
    fn apply_all(&self, tables: &mut T, messages: &[&Message<E>]) -> Result<(), HandlerError>;
}

/// What a project registers with the runtime: its events, and the object
/// its handlers are held as (`dyn for<'t> Handler<Event, dyn Tables + 't>`,
/// allowed to borrow for `'a`), with how to ask one for its set-based
/// path.
///
/// The runtime cannot name that object itself: its tables are the
/// project's, behind a lifetime of their own. So a project implements this
/// once, on a type of its own that stands for its handlers, and the
/// runtime's [`Delivery`](crate::delivery::Delivery) and
/// [`Inbox`](crate::delivery::Inbox) are generic over it.
pub trait Registry: 'static {
    /// The project's event type.
    type Event;
    /// A registered handler, borrowing for `'a` at most.
    type Handler<'a>: ?Sized + Subscriber<Self::Event> + 'a;
    /// Whether `handler` has a set-based path ([`Handler::set_based`]).
    fn has_set_based(handler: &Self::Handler<'_>) -> bool;
    /// An event's wire form, its type and JSON payload: what a dead letter
    /// keeps, so that an operator can read it and re-drive it.
    fn encode(event: &Self::Event) -> (&'static str, String);
    /// What `event` is about (an account): the pipeline's default route
    /// gives the messages with equal keys to one worker, in order.
    fn partition_key(event: &Self::Event) -> u64;
    /// A handler held for the whole run, lent for one delivery: in a
    /// project, `handler` itself (the compiler shortens the borrow there;
    /// it cannot here, where the object is only a generic type).
    fn lend<'a>(handler: &'a Self::Handler<'static>) -> &'a Self::Handler<'a>;
}

/// Any error a handler wants to report. Returning one rolls the whole
/// delivery back, inbox record included, so a redelivery tries again
/// (up to the policy's attempts), unless it is a [`Refused`].
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// A handler's final "no": the message breaks a rule (a refund above what
/// was paid) or names something that does not exist and never will (a
/// refund of a payment never captured). It would fail the same way on
/// every delivery, so it is not retried: its writes are rolled back, it is
/// dead-lettered at once with this reason, and its redeliveries are
/// duplicates. Return it as `Err(Refused::because("...").into())`.
///
/// A failure that may heal (an account not opened yet, a service that is
/// down) is an ordinary error instead: retried, then dead-lettered. A
/// database fault (a lock timeout, a lost connection) is neither: it is
/// never held against the message (see [`crate::storage::StorageError`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

impl Refused {
    pub fn because(reason: impl Into<String>) -> Self {
        Self(reason.into())
    }
}

/// Consumer names: 1 to 64 characters from `a-z`, `0-9`, `_`, `-`, `.`,
/// starting with a letter. They end up in logs and in the inbox key, so
/// they are kept boring.
pub fn is_valid_consumer_name(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_with_letter = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    starts_with_letter
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-.".contains(c))
}

/// Whether consumers named `names` can run side by side: every name valid
/// and distinct. Two consumers with one name would share their inbox rows:
/// the second would take every message the first applied for a duplicate,
/// and never apply it.
pub fn check_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), BadConsumers> {
    let mut seen = std::collections::BTreeSet::new();
    for name in names {
        if !is_valid_consumer_name(name) {
            return Err(BadConsumers::InvalidName(name.to_owned()));
        }
        if !seen.insert(name) {
            return Err(BadConsumers::SameName(name.to_owned()));
        }
    }
    Ok(())
}

/// Picks consumers by name out of `known` (checked first with
/// [`check_names`]) and returns their places in it, in the order asked
/// for; asking for none means all of them.
pub fn pick(wanted: &[String], known: &[&str]) -> Result<Vec<usize>, BadConsumers> {
    check_names(known.iter().copied())?;
    if wanted.is_empty() {
        return Ok((0..known.len()).collect());
    }
    wanted
        .iter()
        .map(|name| {
            known.iter().position(|known| known == name).ok_or_else(|| {
                BadConsumers::from(UnknownConsumer {
                    name: name.clone(),
                    known: known.join(", "),
                })
            })
        })
        .collect()
}

/// Why a set of consumers cannot run together.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadConsumers {
    #[error(
        "two consumers are named `{0}`: they would share their inbox rows, and the second would never apply what the first did"
    )]
    SameName(String),
    #[error(
        "consumer name `{0}` is not valid (1 to 64 of a-z, 0-9, _, -, ., starting with a letter)"
    )]
    InvalidName(String),
    #[error(transparent)]
    Unknown(#[from] UnknownConsumer),
}

/// A consumer name that no handler has.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown consumer `{name}` (known: {known})")]
pub struct UnknownConsumer {
    name: String,
    known: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A project's shape in miniature: two consumers, each bound by the
    /// trait of its own tables, registered over the union of both and run
    /// on tables that borrow (as a transaction does).
    mod project {
        use super::super::*;
        use crate::message::{Message, MessageId};

        pub trait TallyTable {
            fn add(&mut self, n: i64);
        }
        pub trait JournalTable {
            fn log(&mut self, line: String);
        }
        pub trait Tables: TallyTable + JournalTable {}
        impl<T: TallyTable + JournalTable + ?Sized> Tables for T {}
        pub type AnyHandler = dyn for<'t> Handler<i64, dyn Tables + 't>;

        pub struct Tallies;
        impl Subscriber<i64> for Tallies {
            fn consumer(&self) -> &'static str {
                "adds"
            }
            fn subscribes_to(&self, event: &i64) -> bool {
                *event > 0
            }
        }
        impl<T: TallyTable + ?Sized> Handler<i64, T> for Tallies {
            fn apply(&self, tables: &mut T, message: &Message<i64>) -> Result<(), HandlerError> {
                tables.add(message.event);
                Ok(())
            }
            fn set_based(&self) -> Option<&dyn SetBased<i64, T>> {
                Some(self)
            }
        }
        impl<T: TallyTable + ?Sized> SetBased<i64, T> for Tallies {
            fn apply_all(
                &self,
                tables: &mut T,
                messages: &[&Message<i64>],
            ) -> Result<(), HandlerError> {
                tables.add(messages.iter().map(|message| message.event).sum());
                Ok(())
            }
        }

        pub struct Journals;
        impl Subscriber<i64> for Journals {
            fn consumer(&self) -> &'static str {
                "logs"
            }
            fn subscribes_to(&self, _: &i64) -> bool {
                true
            }
        }
        impl<T: JournalTable + ?Sized> Handler<i64, T> for Journals {
            fn apply(&self, tables: &mut T, message: &Message<i64>) -> Result<(), HandlerError> {
                tables.log(format!("{} {}", message.id, message.event));
                Ok(())
            }
        }

        /// Tables of one "transaction", borrowing what it writes to.
        pub struct Tx<'a>(pub &'a mut i64, pub &'a mut Vec<String>);
        impl TallyTable for Tx<'_> {
            fn add(&mut self, n: i64) {
                *self.0 += n;
            }
        }
        impl JournalTable for Tx<'_> {
            fn log(&mut self, line: String) {
                self.1.push(line);
            }
        }

        pub fn message(id: &str, event: i64) -> Message<i64> {
            Message {
                id: MessageId::new(id).unwrap(),
                event,
                trace_parent: None,
            }
        }
    }

    #[test]
    fn handlers_bound_by_their_own_tables_run_over_the_union() {
        use project::*;
        let handlers: Vec<Box<AnyHandler>> = vec![Box::new(Tallies), Box::new(Journals)];
        let (mut total, mut lines) = (0, Vec::new());
        let (one, two) = (message("m-1", 2), message("m-2", 3));
        for handler in &handlers {
            let mut tx = Tx(&mut total, &mut lines);
            let tables: &mut dyn Tables = &mut tx;
            match handler.set_based() {
                Some(set_based) => set_based.apply_all(tables, &[&one, &two]).unwrap(),
                None => {
                    handler.apply(tables, &one).unwrap();
                    handler.apply(tables, &two).unwrap();
                }
            }
        }
        assert_eq!(total, 5);
        assert_eq!(lines, ["m-1 2", "m-2 3"]);
        let names: Vec<&str> = handlers.iter().map(|handler| handler.consumer()).collect();
        assert_eq!(names, ["adds", "logs"]);
        assert!(handlers[0].subscribes_to(&1) && !handlers[0].subscribes_to(&0));
        assert!(
            Journals.subscribes_to(&0),
            "asked without naming any tables"
        );
    }

    #[test]
    fn consumer_names_are_boring() {
        for good in ["debit", "notify", "ledger-v2", "a.b_c"] {
            assert!(is_valid_consumer_name(good), "{good}");
        }
        let too_long = "a".repeat(65);
        for bad in [
            "",
            "Debit",
            "9lives",
            "has space",
            "semi;colon",
            too_long.as_str(),
        ] {
            assert!(!is_valid_consumer_name(bad), "{bad}");
        }
    }

    #[test]
    fn consumers_run_together_only_with_valid_distinct_names() {
        assert_eq!(check_names(["debit", "notify"]), Ok(()));
        assert_eq!(
            check_names(["debit", "notify", "debit"]),
            Err(BadConsumers::SameName("debit".into()))
        );
        assert_eq!(
            check_names(["debit", "Debit"]),
            Err(BadConsumers::InvalidName("Debit".into()))
        );
    }

    #[test]
    fn consumers_are_picked_by_name_in_the_order_asked_for() {
        let known = ["debit", "notify", "refund"];
        let names = |names: &[&str]| {
            names
                .iter()
                .map(|name| name.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(pick(&names(&["refund", "debit"]), &known), Ok(vec![2, 0]));
        assert_eq!(pick(&[], &known), Ok(vec![0, 1, 2]), "none asked for: all");
        assert_eq!(
            pick(&names(&["nope"]), &known).unwrap_err().to_string(),
            "unknown consumer `nope` (known: debit, notify, refund)"
        );
        assert_eq!(
            pick(&names(&["debit"]), &["debit", "debit"]),
            Err(BadConsumers::SameName("debit".into())),
            "the known ones are checked before any is picked"
        );
    }
}
