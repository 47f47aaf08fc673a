//! A stand-in OpenTelemetry collector: an HTTP server on a free loopback
//! port that answers every request 200 and keeps what was posted, so a
//! test can check what `--otlp-endpoint` exported. (OTLP/HTTP bodies are
//! protobuf, where strings and ids appear as their raw bytes: enough to
//! find a message id or a trace id without decoding.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// One request the collector received.
#[derive(Clone, Debug)]
pub struct Posted {
    pub path: String,
    pub body: Vec<u8>,
}

/// The collector, serving until the test ends.
pub struct Collector {
    /// Its base URL, for `--otlp-endpoint`.
    pub url: String,
    posted: Arc<Mutex<Vec<Posted>>>,
}

impl Collector {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let posted = Arc::new(Mutex::new(Vec::new()));
        let keep = posted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let keep = keep.clone();
                std::thread::spawn(move || serve(stream, &keep));
            }
        });
        Self { url, posted }
    }

    /// Every request received so far.
    pub fn posted(&self) -> Vec<Posted> {
        self.posted.lock().expect("the collector's lock").clone()
    }

    /// The bodies of every request received so far, one after another.
    pub fn exported(&self) -> Vec<u8> {
        self.posted()
            .into_iter()
            .flat_map(|request| request.body)
            .collect()
    }
}

/// Answers the requests of one connection, keeping each.
fn serve(stream: TcpStream, posted: &Mutex<Vec<Posted>>) {
    let mut writer = stream.try_clone().expect("a second handle");
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let mut length = 0;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        posted
            .lock()
            .expect("the collector's lock")
            .push(Posted { path, body });
        let answered = writer.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        );
        if answered.is_err() {
            return;
        }
    }
}
