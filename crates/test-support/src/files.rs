//! A loopback HTTP server of one directory's files, as a release page serves its assets: for
//! the test of scripts/install.sh, which must run with no network but the machine's own.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A running server. It stops when dropped.
pub struct FileServer {
    endpoint: String,
    stop: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<String>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FileServer {
    /// Serves the files directly in `dir` (no subdirectories) on a free loopback port: GET of
    /// `/NAME` answers NAME's bytes as they are at the time of the request, or a redirect to what
    /// `NAME.redirect` holds when there is no NAME, anything else 404.
    pub fn start(dir: impl Into<PathBuf>) -> FileServer {
        let dir = dir.into();
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let endpoint = format!("http://{}", listener.local_addr().expect("bound"));
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let (stop, requests) = (stop.clone(), requests.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    if let Some(path) = answer(stream, &dir) {
                        requests.lock().expect("never poisoned").push(path);
                    }
                }
            })
        };
        FileServer { endpoint, stop, requests, thread: Some(thread) }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The paths asked for, in order.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("never poisoned").clone()
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // The accept loop sees the flag on its next connection: this one.
        let _ = TcpStream::connect(self.endpoint.trim_start_matches("http://"));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Answers one request; the path asked for, if it was a request.
fn answer(stream: TcpStream, dir: &std::path::Path) -> Option<String> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    // The headers, read and ignored.
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next()?, parts.next()?.to_owned());
    let name = path.strip_prefix('/').unwrap_or_default();
    let servable = method == "GET" && !name.is_empty() && !name.contains(['/', '\\']) && name != ".." && name != ".";
    let body = servable.then(|| std::fs::read(dir.join(name)).ok()).flatten();
    // `NAME.redirect` holds where a request for NAME is sent instead.
    let redirect = servable.then(|| std::fs::read_to_string(dir.join(format!("{name}.redirect"))).ok()).flatten();
    let mut stream = stream;
    let _ = match body {
        None if redirect.is_some() => write!(
            stream,
            "HTTP/1.1 302 Found\r\nLocation: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            redirect.unwrap_or_default().trim()
        ),
        Some(body) => write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .and_then(|()| stream.write_all(&body)),
        None => write!(stream, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
    };
    Some(path)
}
