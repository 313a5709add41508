//! What the AWS backend hands each resource crate to build its reconciler from, so the binary
//! builds every AWS crate's reconciler by going over its one list: a crate's own clients and
//! settings are its own to make (its `reconciler` function), not the binary's.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::client::interceptors::SharedInterceptor;
use aws_types::SdkConfig;
use reconcile_core::{Account, Desired, Destroy, Prune, Reconciler};

use crate::Parallelism;

/// How the AWS backend builds a crate's reconciler. Building one makes no request.
pub type BuildFn = fn(&Clients<'_>) -> Box<dyn Reconciler>;

/// Everything a crate's reconciler is built from.
pub struct Clients<'a> {
    /// The SDK's configuration: credentials, region, endpoint, timeouts and retries.
    pub sdk: &'a SdkConfig,
    /// Counts every request for the run's log line: each client is built with it.
    pub interceptor: SharedInterceptor,
    /// How the run meets throttling: each client is built with it ([`crate::configure!`]).
    pub pacing: &'a crate::Pacing,
    pub account: &'a Account,
    pub desired: &'a Desired,
    /// Requests in flight at once to each service (`--parallelism`): each reconciler makes its
    /// own [`Parallelism`] of it.
    pub parallelism: usize,
    /// `--prune`: how the crate that prunes (ECR's) deletes what desired.toml no longer declares.
    pub prune: Option<Prune>,
    /// `reconcile destroy`: each crate deletes its declared resources, their data only as this
    /// allows.
    pub destroy: Option<Destroy>,
    /// What a crate keeps across the reconcilers one run builds; `None` when each must read
    /// afresh (a run that writes).
    pub shared: Option<&'a Shared>,
}

impl Clients<'_> {
    /// A reconciler's share of the parallelism, for its requests to `service` (`ecr`), paced at
    /// that service's gate.
    pub fn limit(&self, service: &'static str) -> Parallelism {
        Parallelism::new(self.parallelism).paced(self.pacing, service)
    }

    /// Whether requests go to an overridden endpoint (an emulator) rather than AWS.
    pub fn endpoint_overridden(&self) -> bool {
        self.sdk.endpoint_url().is_some()
    }
}

/// One value of each type a crate asks for, made on first use and shared after: a run that
/// only reads builds ECR's reconciler more than once and reads its repositories once.
#[derive(Default)]
pub struct Shared(Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl Shared {
    /// The run's one `T`.
    pub fn get<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut values = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let value = values.entry(TypeId::of::<T>()).or_insert_with(|| Arc::new(T::default()));
        Arc::clone(value).downcast::<T>().expect("stored under its own type id")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_value_is_made_once_per_type() {
        let shared = Shared::default();
        let first = shared.get::<Mutex<Vec<u8>>>();
        first.lock().unwrap().push(1);
        assert_eq!(*shared.get::<Mutex<Vec<u8>>>().lock().unwrap(), [1]);
        assert!(Arc::ptr_eq(&first, &shared.get::<Mutex<Vec<u8>>>()));
        assert_eq!(*shared.get::<Mutex<Vec<u16>>>().lock().unwrap(), Vec::<u16>::new());
    }
}
