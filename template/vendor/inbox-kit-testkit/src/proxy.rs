//! A TCP proxy on loopback that a test can cut and restore: how a test
//! takes a server away from a consumer (an outage, a network partition)
//! without touching the server, which other tests share.
//!
//! While cut, every connection it carried is shut down and every new one
//! is closed as soon as it is accepted, so a client sees the server gone
//! at once (no timeout to wait for). Cutting and accepting take the same
//! lock, so no connection slips through a cut.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::thread;

/// A proxy to one server; it forwards until dropped with the test.
pub struct Proxy {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    cut: bool,
    /// Both ends of every connection carried, to shut down on a cut.
    carried: Vec<TcpStream>,
}

impl Proxy {
    /// Starts forwarding a free loopback port to `target` (`host:port`).
    pub fn to(target: &str) -> Self {
        let target: SocketAddr = target
            .to_socket_addrs()
            .ok()
            .and_then(|mut addrs| addrs.next())
            .unwrap_or_else(|| panic!("cannot resolve {target}"));
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
        let addr = listener.local_addr().expect("the proxy's address");
        let state = Arc::new(Mutex::new(State::default()));
        let accepting = state.clone();
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let mut state = accepting.lock().expect("proxy state");
                if state.cut {
                    drop(client);
                    continue;
                }
                match carry(client, target) {
                    Ok(ends) => state.carried.extend(ends),
                    Err(error) => eprintln!("proxy: cannot reach {target}: {error}"),
                }
            }
        });
        Self { addr, state }
    }

    /// Where clients connect: `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Takes the server away: open connections are shut down, new ones
    /// closed on arrival.
    pub fn cut(&self) {
        let mut state = self.state.lock().expect("proxy state");
        state.cut = true;
        for end in state.carried.drain(..) {
            let _ = end.shutdown(Shutdown::Both);
        }
    }

    /// Gives the server back to new connections.
    pub fn restore(&self) {
        self.state.lock().expect("proxy state").cut = false;
    }
}

/// Connects `client` to `target` and copies both ways on threads of their
/// own; returns both ends, to shut down on a cut.
fn carry(client: TcpStream, target: SocketAddr) -> io::Result<[TcpStream; 2]> {
    let server = TcpStream::connect(target)?;
    let ends = [client.try_clone()?, server.try_clone()?];
    let (mut client_in, mut server_out) = (client.try_clone()?, server.try_clone()?);
    let (mut server_in, mut client_out) = (server, client);
    thread::spawn(move || {
        let _ = io::copy(&mut client_in, &mut server_out);
        let _ = server_out.shutdown(Shutdown::Write);
    });
    thread::spawn(move || {
        let _ = io::copy(&mut server_in, &mut client_out);
        let _ = client_out.shutdown(Shutdown::Write);
    });
    Ok(ends)
}
