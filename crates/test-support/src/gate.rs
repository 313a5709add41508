//! The decider of the emulator's policy gate (`tests/emulator/gate.py`): a loopback HTTP endpoint
//! the launcher asks, for every request of a gated access key, whether to serve it. The test
//! decides with the policies it holds the role to; the launcher answers AccessDenied in the
//! service's protocol when it may not.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::RecordedRequest;

/// One request the launcher asks about.
#[derive(Debug, Clone)]
pub struct Question {
    pub request: RecordedRequest,
    /// The condition keys the launcher knows of it (lower-case or not: IAM's are compared
    /// without case).
    pub context: BTreeMap<String, Vec<String>>,
    /// The role a CodeBuild project is given by it, which IAM checks as `iam:PassRole`.
    pub passes_role: Option<String>,
}

type Decide = dyn Fn(&Question) -> Result<(), String> + Send + Sync;

/// A running decider: `decide` answers `Err(message)` to refuse. When dropped, the keys it holds
/// go through ungated again and it stops.
pub struct Gate {
    url: String,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    refused: Arc<std::sync::Mutex<Vec<String>>>,
    held: std::sync::Mutex<Vec<String>>,
}

impl Gate {
    pub fn start(decide: impl Fn(&Question) -> Result<(), String> + Send + Sync + 'static) -> Gate {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let url = format!("http://{}/", listener.local_addr().expect("bound"));
        listener.set_nonblocking(true).expect("non-blocking");
        let stop = Arc::new(AtomicBool::new(false));
        let refused = Arc::new(std::sync::Mutex::new(Vec::new()));
        let decide: Arc<Decide> = Arc::new(decide);
        let thread = {
            let (stop, refused) = (Arc::clone(&stop), Arc::clone(&refused));
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let (decide, refused) = (Arc::clone(&decide), Arc::clone(&refused));
                            std::thread::spawn(move || answer(stream, decide.as_ref(), &refused));
                        }
                        Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(std::time::Duration::from_millis(5));
                        }
                        Err(_) => break,
                    }
                }
            })
        };
        Gate { url, stop, thread: Some(thread), refused, held: std::sync::Mutex::default() }
    }

    /// From now on, every request made with `account`'s keys is decided here first.
    pub fn hold(&self, account: &crate::TestAccount) {
        crate::emulator().gate(&account.access_key_id, Some(&self.url));
        self.held.lock().expect("never poisoned").push(account.access_key_id.clone());
    }

    /// Every request it refused so far, as `service:Action` with why.
    pub fn refused(&self) -> Vec<String> {
        self.refused.lock().expect("never poisoned").clone()
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        for key in self.held.lock().expect("never poisoned").drain(..) {
            crate::emulator().gate(&key, None);
        }
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads one HTTP request (the launcher's POST), decides, answers, closes.
fn answer(stream: TcpStream, decide: &Decide, refused: &std::sync::Mutex<Vec<String>>) {
    stream.set_nonblocking(false).expect("blocking");
    let mut reader = BufReader::new(stream.try_clone().expect("a second handle"));
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let asked: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let context = asked["context"]
        .as_object()
        .map(|keys| {
            keys.iter()
                .map(|(key, values)| {
                    let values =
                        values.as_array().map(|v| v.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect());
                    (key.clone(), values.unwrap_or_default())
                })
                .collect()
        })
        .unwrap_or_default();
    let question = Question {
        request: RecordedRequest::from_json(&asked),
        context,
        passes_role: asked["passes_role"].as_str().map(str::to_owned),
    };
    let decision = match decide(&question) {
        Ok(()) => serde_json::json!({ "allowed": true }),
        Err(message) => {
            refused.lock().expect("never poisoned").push(format!("{}: {message}", question.request));
            serde_json::json!({ "allowed": false, "message": message })
        }
    };
    let body = decision.to_string();
    let mut stream = reader.into_inner();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}
