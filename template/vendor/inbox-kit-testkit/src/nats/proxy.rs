//! A proxy between a consumer and the NATS server that watches, and can
//! withhold, the consumer's settles (acknowledgements, naks, terms).
//!
//! Whether a consumer waits for the server to confirm its acknowledgements
//! cannot be seen from the outcome of a run: an acknowledgement sent and
//! forgotten usually arrives too. It can be seen here, deterministically:
//!
//! * every settle the proxy sees must ask for a confirmation (carry a reply
//!   subject): one that does not is fire and forget by construction;
//! * the proxy withholds chosen settles from the server, which then never
//!   confirms them: a consumer that waits for confirmations must count
//!   exactly those as unconfirmed, and count as done only the ones the
//!   server got.
//!
//! The proxy reads the client's side of the protocol (one operation per
//! line; `PUB` and `HPUB` carry a payload of the size they announce) and
//! copies the server's side untouched.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Where JetStream acknowledgements go: the reply subject of each message.
const ACK_PREFIX: &str = "$JS.ACK.";

/// One settle on its way to the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settle {
    pub kind: SettleKind,
    /// The message's stream sequence.
    pub stream_sequence: u64,
    /// How many times the server had delivered the message.
    pub delivered: u64,
    /// Whether it asks the server to confirm it (has a reply subject).
    pub asks_confirmation: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettleKind {
    Ack,
    Nak,
    Term,
    /// `+WPI`: more time for a message in progress (not a settle).
    Progress,
    Other,
}

/// Which settles the proxy keeps from the server.
pub type Withhold = fn(&Settle) -> bool;

/// Withholds nothing.
pub fn withhold_nothing(_: &Settle) -> bool {
    false
}

/// Withholds the settle of the first delivery of every third stream
/// message: the server never sees it, so it never confirms it, and the
/// message comes back after its ack wait.
pub fn withhold_first_settle_of_every_third(settle: &Settle) -> bool {
    settle.delivered == 1 && settle.stream_sequence.is_multiple_of(3)
}

/// What the proxy saw of the settles (progress excluded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SettleCounts {
    /// Passed on to the server.
    pub forwarded: u64,
    /// Kept from the server.
    pub withheld: u64,
    /// Sent without asking for a confirmation (forwarded or not).
    pub unconfirmable: u64,
}

impl SettleCounts {
    /// What is wrong with a consumer that reported `confirmed` settles as
    /// confirmed by the server and `unconfirmed` as not, if anything.
    pub fn problems(&self, confirmed: u64, unconfirmed: u64) -> Vec<String> {
        let mut problems = Vec::new();
        if self.unconfirmable > 0 {
            problems.push(format!(
                "{} settles did not ask the server for a confirmation (fire and forget)",
                self.unconfirmable
            ));
        }
        if confirmed != self.forwarded {
            problems.push(format!(
                "the consumer counts {confirmed} settles as confirmed, the server received {}",
                self.forwarded
            ));
        }
        if unconfirmed != self.withheld {
            problems.push(format!(
                "the consumer counts {unconfirmed} settles as unconfirmed, {} were never confirmed",
                self.withheld
            ));
        }
        problems
    }
}

/// A listening proxy to `upstream` (`host:port`), until dropped.
pub struct SettleProxy {
    pub url: String,
    shared: Arc<Shared>,
    address: std::net::SocketAddr,
}

struct Shared {
    upstream: String,
    withhold: Withhold,
    forwarded: AtomicU64,
    withheld: AtomicU64,
    unconfirmable: AtomicU64,
    closing: AtomicBool,
}

impl SettleProxy {
    /// Listens on a free loopback port.
    pub fn start(upstream: &str, withhold: Withhold) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let address = listener.local_addr().expect("its address");
        let shared = Arc::new(Shared {
            upstream: upstream.to_owned(),
            withhold,
            forwarded: AtomicU64::new(0),
            withheld: AtomicU64::new(0),
            unconfirmable: AtomicU64::new(0),
            closing: AtomicBool::new(false),
        });
        let accepting = shared.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if accepting.closing.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let shared = accepting.clone();
                std::thread::spawn(move || shared.serve(client));
            }
        });
        Self {
            url: format!("nats://{address}"),
            shared,
            address,
        }
    }

    /// The settles seen so far.
    pub fn counts(&self) -> SettleCounts {
        SettleCounts {
            forwarded: self.shared.forwarded.load(Ordering::SeqCst),
            withheld: self.shared.withheld.load(Ordering::SeqCst),
            unconfirmable: self.shared.unconfirmable.load(Ordering::SeqCst),
        }
    }
}

impl Drop for SettleProxy {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::SeqCst);
        // Wakes the accepting thread so that it sees the flag.
        let _ = TcpStream::connect(self.address);
    }
}

impl Shared {
    fn serve(&self, client: TcpStream) {
        let Ok(server) = TcpStream::connect(&self.upstream) else {
            return;
        };
        let (Ok(mut to_client), Ok(mut from_server)) = (client.try_clone(), server.try_clone())
        else {
            return;
        };
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut from_server, &mut to_client);
            let _ = to_client.shutdown(Shutdown::Both);
        });
        let _ = self.pass_client_side(BufReader::new(client), server);
    }

    /// Copies the client's operations to the server, except withheld
    /// settles.
    fn pass_client_side(
        &self,
        mut client: BufReader<TcpStream>,
        mut server: TcpStream,
    ) -> std::io::Result<()> {
        let mut line = Vec::new();
        loop {
            line.clear();
            if client.read_until(b'\n', &mut line)? == 0 {
                let _ = server.shutdown(Shutdown::Both);
                return Ok(());
            }
            let text = String::from_utf8_lossy(&line).into_owned();
            let words: Vec<&str> = text.split_whitespace().collect();
            let payload_size = match words.first().map(|op| op.to_ascii_uppercase()) {
                Some(op) if op == "PUB" => words.last().and_then(|n| n.parse::<usize>().ok()),
                Some(op) if op == "HPUB" => words.last().and_then(|n| n.parse::<usize>().ok()),
                _ => None,
            };
            let Some(size) = payload_size else {
                server.write_all(&line)?;
                continue;
            };
            let mut payload = vec![0; size + 2]; // and its CRLF
            client.read_exact(&mut payload)?;
            let header_words = if words[0].eq_ignore_ascii_case("HPUB") {
                2
            } else {
                1
            };
            let subject = words.get(1).copied().unwrap_or_default();
            // PUB subject [reply] size; HPUB subject [reply] header-size size.
            let has_reply = words.len() > 2 + header_words;
            let body = &payload[..size];
            if subject.starts_with(ACK_PREFIX) && !self.settle(subject, body, has_reply) {
                continue;
            }
            server.write_all(&line)?;
            server.write_all(&payload)?;
        }
    }

    /// Counts a settle; `false` if it is withheld.
    fn settle(&self, subject: &str, body: &[u8], has_reply: bool) -> bool {
        let settle = parse_settle(subject, body, has_reply);
        if settle.kind == SettleKind::Progress {
            return true;
        }
        if !settle.asks_confirmation {
            self.unconfirmable.fetch_add(1, Ordering::SeqCst);
        }
        if (self.withhold)(&settle) {
            self.withheld.fetch_add(1, Ordering::SeqCst);
            false
        } else {
            self.forwarded.fetch_add(1, Ordering::SeqCst);
            true
        }
    }
}

/// Reads a settle from its subject, `$JS.ACK.<stream>.<consumer>.
/// <delivered>.<stream seq>.<consumer seq>.<time>.<pending>` (servers with
/// a domain put two more tokens after `ACK`, and may add one at the end).
fn parse_settle(subject: &str, body: &[u8], asks_confirmation: bool) -> Settle {
    let tokens: Vec<&str> = subject.split('.').collect();
    let offset = if tokens.len() >= 11 { 4 } else { 2 };
    let number = |at: usize| {
        tokens
            .get(offset + at)
            .and_then(|token| token.parse().ok())
            .unwrap_or(0)
    };
    let kind = match body {
        b if b.starts_with(b"+ACK") || b.is_empty() => SettleKind::Ack,
        b if b.starts_with(b"-NAK") => SettleKind::Nak,
        b if b.starts_with(b"+TERM") => SettleKind::Term,
        b if b.starts_with(b"+WPI") => SettleKind::Progress,
        _ => SettleKind::Other,
    };
    Settle {
        kind,
        delivered: number(2),
        stream_sequence: number(3),
        asks_confirmation,
    }
}
