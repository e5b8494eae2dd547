//! A scripted HTTP/1.1 server on loopback, for testing clients of HTTP services (embedding
//! and LLM APIs) against the real wire protocol: each connection gets the next scripted reply,
//! and every request is recorded; or each request gets what a function makes of it.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpListener},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    thread::{self, JoinHandle},
    time::Duration,
};

/// One scripted answer.
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body (sent with `Content-Type: application/json` unless a header says otherwise).
    pub body: Vec<u8>,
    /// Wait this long before answering.
    pub delay: Duration,
    /// When not empty, the body is sent in these pieces with chunked transfer encoding, one
    /// write and flush each (a server-sent event stream), and `body` is ignored.
    pub chunks: Vec<Vec<u8>>,
}

impl Reply {
    /// A JSON reply.
    pub fn json(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.into().into_bytes(),
            delay: Duration::ZERO,
            chunks: Vec::new(),
        }
    }

    /// A `text/event-stream` reply: each item is one event's lines (`event: ...`, `data: ...`)
    /// without the blank line that ends it, sent as its own chunk.
    pub fn sse<S: AsRef<str>>(events: impl IntoIterator<Item = S>) -> Self {
        Self {
            status: 200,
            headers: vec![("Content-Type", "text/event-stream".into())],
            body: Vec::new(),
            delay: Duration::ZERO,
            chunks: events
                .into_iter()
                .map(|e| format!("{}\n\n", e.as_ref()).into_bytes())
                .collect(),
        }
    }

    /// The same reply with an extra header.
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The same reply after a delay.
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// A reply of raw bytes.
    pub fn bytes(status: u16, body: Vec<u8>) -> Self {
        Self {
            status,
            headers: vec![("Content-Type", "application/octet-stream".into())],
            body,
            delay: Duration::ZERO,
            chunks: Vec::new(),
        }
    }
}

/// A received request.
#[derive(Clone, Debug)]
pub struct Received {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request target, for example `/v1/embeddings`.
    pub path: String,
    /// Headers in order.
    pub headers: Vec<(String, String)>,
    /// The body as text.
    pub body: String,
}

impl Received {
    /// A header's value (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The server; stops when dropped.
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    handle: Option<JoinHandle<()>>,
    /// Set when dropped, for a server that answers until then.
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Serves `replies` in order, one per connection, then stops.
    pub fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
        let addr = listener.local_addr().expect("address");
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let log = Arc::clone(&received);
        let handle = thread::spawn(move || {
            let mut workers = Vec::new();
            for reply in replies {
                let Ok((stream, _)) = listener.accept() else {
                    break;
                };
                let log = Arc::clone(&log);
                // Each connection on its own thread, so a slow reply does not hold the next.
                workers.push(thread::spawn(move || answer(stream, &reply, &log)));
            }
            for w in workers {
                let _ = w.join();
            }
        });
        Self {
            addr,
            received,
            handle: Some(handle),
            stop: Arc::default(),
        }
    }

    /// Answers every request with what `respond` makes of it, until dropped.
    pub fn answering(respond: impl Fn(&Received) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
        let addr = listener.local_addr().expect("address");
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let log = Arc::clone(&received);
        let respond = Arc::new(respond);
        let stop: Arc<AtomicBool> = Arc::default();
        let stopped = Arc::clone(&stop);
        let handle = thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                let (log, respond) = (Arc::clone(&log), Arc::clone(&respond));
                thread::spawn(move || {
                    let mut reader = BufReader::new(stream);
                    let Some(request) = read_request(&mut reader) else {
                        return;
                    };
                    if request.method.is_empty() {
                        return;
                    }
                    let reply = respond(&request);
                    log.lock().unwrap_or_else(|p| p.into_inner()).push(request);
                    write_reply(reader.into_inner(), &reply);
                });
            }
        });
        Self {
            addr,
            received,
            handle: Some(handle),
            stop,
        }
    }

    /// `http://ADDR/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Received> {
        self.received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Unblock a pending accept, then let the thread finish.
        self.stop.store(true, Ordering::Relaxed);
        let _ = std::net::TcpStream::connect(self.addr);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn answer(stream: std::net::TcpStream, reply: &Reply, log: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(stream);
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    log.lock().unwrap_or_else(|p| p.into_inner()).push(request);
    write_reply(reader.into_inner(), reply);
}

/// One request's line, headers and body.
fn read_request(reader: &mut BufReader<std::net::TcpStream>) -> Option<Received> {
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    Some(Received {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn write_reply(mut stream: std::net::TcpStream, reply: &Reply) {
    thread::sleep(reply.delay);
    // Pieces go out as written, not held for the client's delayed ACK.
    let _ = stream.set_nodelay(true);
    let framing = if reply.chunks.is_empty() {
        format!("Content-Length: {}", reply.body.len())
    } else {
        "Transfer-Encoding: chunked".to_owned()
    };
    let mut head = format!(
        "HTTP/1.1 {} Scripted\r\n{framing}\r\nConnection: close\r\n",
        reply.status,
    );
    if !reply
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    if reply.chunks.is_empty() {
        let _ = stream.write_all(&reply.body);
    } else {
        for chunk in &reply.chunks {
            let _ = write!(stream, "{:x}\r\n", chunk.len());
            let _ = stream.write_all(chunk);
            let _ = stream.write_all(b"\r\n");
            let _ = stream.flush();
            thread::sleep(Duration::from_millis(2));
        }
        let _ = stream.write_all(b"0\r\n\r\n");
    }
    let _ = stream.flush();
}
