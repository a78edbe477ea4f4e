//! The plans of a helper: each helper (`efr-proxy`, `efr-bus-proxy`) opens one plan per contained call (a listening
//! socket of its own) and closes it when the call ends, returning what the call's connections did. The messages
//! differ by helper ([`PlanKind`]); the supervision and the plan's life are the same.

use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;

use efr_protocol::internal::proxy::ClosePlan;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{HelperError, Instance, Supervisor};

/// One helper's plan messages (`efr_protocol::internal::proxy`, `efr_protocol::internal::bus_proxy`).
pub trait PlanKind {
    /// The program's name, such as `efr-proxy`.
    const NAME: &'static str;
    /// The environment variable that names another program (`EFR_PROXY`).
    const VARIABLE: &'static str;
    /// The open request's method.
    const OPEN: &'static str;
    /// The close request's method (its params are [`ClosePlan`]).
    const CLOSE: &'static str;
    /// The open request's params.
    type Open: Serialize + Sync;
    /// The open request's answer.
    type Opened: DeserializeOwned + OpenedPlan;
    /// The close request's answer: what the plan's connections did.
    type Closed: DeserializeOwned;
}

/// What an open request answers: the plan's number and its listening socket.
pub trait OpenedPlan {
    /// The plan's number in its helper.
    fn plan(&self) -> u64;
    /// The plan's listening socket, absolute.
    fn socket(&self) -> PathBuf;
}

/// The supervised helper of kind `K` of one daemon, in an `Arc`. The supervision itself
/// ([`Supervisor::program`], [`Supervisor::installed`], [`Supervisor::status`]) is the shared supervisor's.
#[derive(Debug)]
pub struct PlanSupervisor<K> {
    helper: Arc<Supervisor>,
    kind: PhantomData<K>,
}

/// An open plan of one call, of a helper of kind `K`: close it with [`PlanSupervisor::close`] when the call ends.
#[derive(Debug, Clone)]
pub struct HelperPlan<K> {
    instance: Arc<Instance>,
    kind: PhantomData<K>,
    /// The plan's number in that helper.
    pub plan: u64,
    /// The plan's listening socket, which the call's launch plan uses.
    pub socket: PathBuf,
}

impl<K> std::ops::Deref for PlanSupervisor<K> {
    type Target = Supervisor;

    fn deref(&self) -> &Supervisor {
        &self.helper
    }
}

impl<K: PlanKind> PlanSupervisor<K> {
    /// A supervisor of `program` whose plan sockets go in `sockets`; nothing starts yet.
    #[must_use]
    pub fn new(program: PathBuf, sockets: PathBuf) -> Self {
        Self {
            helper: Arc::new(Supervisor::new(K::NAME, program, sockets)),
            kind: PhantomData,
        }
    }

    /// The program of the default setup: `$VARIABLE` when set, else the program next to the running efrd.
    #[must_use]
    pub fn default_program() -> PathBuf {
        Supervisor::default_program(K::NAME, K::VARIABLE)
    }

    /// Opens a plan for one call, starting the helper first when none runs.
    ///
    /// # Errors
    /// [`HelperError::NotInstalled`], [`HelperError::Start`], or [`HelperError::Control`] when the helper refused
    /// the plan or did not answer in time.
    pub async fn open(&self, plan: &K::Open) -> Result<HelperPlan<K>, HelperError> {
        let (instance, opened): (_, K::Opened) = self.helper.call(K::OPEN, plan).await?;
        Ok(HelperPlan {
            instance,
            kind: PhantomData,
            plan: opened.plan(),
            socket: opened.socket(),
        })
    }

    /// Closes a call's plan and returns what its connections did.
    ///
    /// # Errors
    /// [`HelperError::Died`] when the helper that served the plan ended while it was open (the call must fail: its
    /// connections were cut), [`HelperError::Control`] when the helper refused the close or did not answer.
    pub async fn close(&self, plan: &HelperPlan<K>) -> Result<K::Closed, HelperError> {
        self.helper
            .call_on(&plan.instance, K::CLOSE, &ClosePlan { plan: plan.plan })
            .await
    }
}
