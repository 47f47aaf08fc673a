//! What a consumer receives: an id fixed by the sender and one of this
//! project's events. The id and its rules are the runtime crate's
//! (`inbox_kit_runtime::message`); the event type is this project's.

pub use inbox_kit_runtime::message::{
    InvalidMessageId, MAX_MESSAGE_ID_BYTES, MessageId, TRACEPARENT,
};

use crate::event::Event;

/// One message as this project's consumers see it.
pub type Message = inbox_kit_runtime::message::Message<Event>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_business_id_has_a_message_ids_limit() {
        assert_eq!(crate::event::MAX_BUSINESS_ID_BYTES, MAX_MESSAGE_ID_BYTES);
    }
}
