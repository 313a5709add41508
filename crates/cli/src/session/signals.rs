//! SIGINT and SIGTERM, heard by the session from the lock on (or sent by hand in tests).

use anyhow::Context;

use crate::error::CliError;
use crate::exit;

/// The signals a run was sent, as the exit codes a shell gives them (130 for SIGINT, 143 for
/// SIGTERM).
pub struct Interrupts {
    receiver: Option<tokio::sync::mpsc::UnboundedReceiver<u8>>,
}

impl Interrupts {
    /// SIGINT and SIGTERM, from now on, for the rest of the process.
    pub fn signals() -> Result<Interrupts, CliError> {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind| signal(kind).context("failed to listen for SIGINT and SIGTERM");
        let (mut interrupt, mut terminate) = (listen(SignalKind::interrupt())?, listen(SignalKind::terminate())?);
        let (sender, interrupts) = Interrupts::channel();
        tokio::spawn(async move {
            loop {
                let code = tokio::select! {
                    _ = interrupt.recv() => exit::INTERRUPTED,
                    _ = terminate.recv() => exit::TERMINATED,
                };
                if sender.send(code).is_err() {
                    break;
                }
            }
        });
        Ok(interrupts)
    }

    /// Interrupts sent by hand, for tests: each code sent is one signal.
    pub fn channel() -> (tokio::sync::mpsc::UnboundedSender<u8>, Interrupts) {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        (sender, Interrupts { receiver: Some(receiver) })
    }

    /// None, ever: for what runs before the lock, when a signal ends the process anyway.
    pub fn none() -> Interrupts {
        Interrupts { receiver: None }
    }

    /// The next signal's exit code; never, when none can come.
    pub async fn next(&mut self) -> u8 {
        match &mut self.receiver {
            Some(receiver) => match receiver.recv().await {
                Some(code) => code,
                None => std::future::pending().await,
            },
            None => std::future::pending().await,
        }
    }
}
