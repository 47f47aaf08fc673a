//! The proxy between a client and an echo server: it carries bytes both
//! ways, a cut ends every connection at once and refuses new ones, and a
//! restore lets new ones through again.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};

use inbox_kit_testkit::proxy::Proxy;

/// An echo server on a free loopback port; returns its address.
fn echo_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = listener.local_addr().expect("its address").to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut reading = stream.try_clone().expect("a second handle");
                let mut writing = stream;
                let _ = std::io::copy(&mut reading, &mut writing);
            });
        }
    });
    addr
}

fn echoes(stream: &mut TcpStream, text: &[u8]) -> bool {
    if stream.write_all(text).is_err() {
        return false;
    }
    let mut back = vec![0; text.len()];
    stream.read_exact(&mut back).is_ok() && back == text
}

/// Whether the proxy closed `stream`: a read ends (0 bytes) or fails with
/// a reset, instead of blocking.
fn closed(stream: &mut TcpStream) -> bool {
    let mut byte = [0];
    match stream.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(error) => matches!(
            error.kind(),
            ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
        ),
    }
}

#[test]
fn it_carries_cuts_and_restores() {
    let proxy = Proxy::to(&echo_server());
    let mut before = TcpStream::connect(proxy.addr()).expect("connect through the proxy");
    assert!(echoes(&mut before, b"hello"));

    proxy.cut();
    assert!(closed(&mut before), "an open connection ends at the cut");
    let mut during = TcpStream::connect(proxy.addr()).expect("the port still accepts");
    assert!(closed(&mut during), "a new connection is closed on arrival");

    proxy.restore();
    let mut after = TcpStream::connect(proxy.addr()).expect("connect again");
    assert!(echoes(&mut after, b"again"));
}
