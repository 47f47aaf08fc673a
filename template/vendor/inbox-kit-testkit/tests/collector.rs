//! The collector keeps what is posted to it, request by request and path by
//! path, over one kept-alive connection or several, and answers each 200.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

use inbox_kit_testkit::collector::Collector;

/// Posts `body` to `path` on `stream` and reads the status line back.
fn post(stream: &mut TcpStream, path: &str, body: &[u8]) -> String {
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: collector\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("send the head");
    stream.write_all(body).expect("send the body");
    let mut reader = BufReader::new(stream.try_clone().expect("a second handle"));
    let mut status = String::new();
    reader.read_line(&mut status).expect("the status line");
    let mut line = String::new();
    while reader.read_line(&mut line).expect("a header") > 2 {
        line.clear();
    }
    status
}

#[test]
fn it_keeps_every_request_and_answers_200() {
    let collector = Collector::start();
    let addr = collector.url.strip_prefix("http://").expect("an http url");
    let mut one = TcpStream::connect(addr).expect("connect");
    assert!(post(&mut one, "/v1/traces", b"span\x00\xffid").starts_with("HTTP/1.1 200"));
    assert!(post(&mut one, "/v1/metrics", b"").starts_with("HTTP/1.1 200"));
    let mut two = TcpStream::connect(addr).expect("connect again");
    assert!(post(&mut two, "/v1/traces", b"more").starts_with("HTTP/1.1 200"));

    let posted = collector.posted();
    let paths: Vec<&str> = posted.iter().map(|request| request.path.as_str()).collect();
    assert_eq!(paths, ["/v1/traces", "/v1/metrics", "/v1/traces"]);
    assert_eq!(posted[0].body, b"span\x00\xffid");
    assert_eq!(collector.exported(), b"span\x00\xffidmore");
}
