//! Why the component gave no answer to a call, and why a policy set did
//! not load: told apart by the types in the error's chain, never its text.

use super::memory::MemoryRefused;
use std::time::Duration;

/// Why the component gave no answer to a call. The server answers each as
/// an `error` result of every policy in scope, never as a 500.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The call ran past its deadline (epoch interruption or the backstop).
    Deadline(Duration),
    /// The instance needed more than its memory limit.
    OutOfMemory(usize),
    /// No instance became free within the request's deadline.
    Busy(Duration),
    /// The request's namespace already held all of its turns
    /// (`Limits::namespace_instances`) for the whole deadline.
    NamespaceBusy {
        namespace: String,
        turns: usize,
        deadline: Duration,
    },
    /// Any other trap, or an instance that could not be created: `why` in
    /// words a person reads (the kind of trap), `detail` the whole error
    /// with the guest's backtrace, for the log only.
    Trap { why: String, detail: String },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Deadline(d) => {
                write!(f, "evaluation exceeded its deadline of {}", humanize(*d))
            }
            Failure::OutOfMemory(limit) => write!(
                f,
                "evaluation ran out of memory (limit {} MiB per instance)",
                limit >> 20
            ),
            Failure::Busy(d) => write!(
                f,
                "no policy instance became free within the deadline of {}",
                humanize(*d)
            ),
            Failure::NamespaceBusy {
                namespace,
                turns,
                deadline,
            } => write!(
                f,
                "namespace {namespace:?} already has {turns} requests being judged (its share of the policy instances), and none finished within the deadline of {}",
                humanize(*deadline)
            ),
            Failure::Trap { why, .. } => f.write_str(why),
        }
    }
}

impl std::error::Error for Failure {}

impl Failure {
    /// The `reason` label of `ivpol_component_failures`.
    pub fn reason(&self) -> &'static str {
        match self {
            Failure::Deadline(_) => "deadline",
            Failure::OutOfMemory(_) => "out_of_memory",
            Failure::Busy(_) => "busy",
            Failure::NamespaceBusy { .. } => "namespace_busy",
            Failure::Trap { .. } => "trap",
        }
    }

    /// A failure that is not the request's fault or the pool's: `why` is
    /// what the answer says.
    pub(crate) fn trap(why: impl Into<String>) -> Failure {
        let why = why.into();
        Failure::Trap {
            detail: why.clone(),
            why,
        }
    }

    /// Everything known about the failure, for the log: a trap's whole
    /// error chain and backtrace, which never goes into an answer.
    pub fn detail(&self) -> String {
        match self {
            Failure::Trap { detail, .. } => detail.clone(),
            other => other.to_string(),
        }
    }

    /// Whether one policy may have caused it: a trap or the memory limit,
    /// which a policy's evaluation can reach (a deadline or a busy pool is
    /// the request's lot, not one policy's).
    pub(crate) fn may_be_one_policys(&self) -> bool {
        matches!(self, Failure::Trap { .. } | Failure::OutOfMemory(_))
    }
}

fn humanize(d: Duration) -> String {
    match d.subsec_millis() {
        0 => format!("{}s", d.as_secs()),
        _ => format!("{}ms", d.as_millis()),
    }
}

/// Why loading a policy set failed, in words a person reads: the memory
/// limit, the kind of trap, or the error's first line; never the wasm
/// backtrace (which goes to the log with the whole error).
pub fn load_failure(error: &anyhow::Error) -> String {
    if let Some(refused) = error
        .chain()
        .find_map(|c| c.downcast_ref::<MemoryRefused>())
    {
        return format!(
            "it needs more than the {} MiB an instance may use",
            refused.limit >> 20
        );
    }
    if let Some(trap) = error
        .chain()
        .find_map(|c| c.downcast_ref::<wasmtime::Trap>())
    {
        return format!("the component trapped: {trap}");
    }
    let text = format!("{error:#}");
    text.lines().next().unwrap_or_default().to_string()
}

/// What a failed wasmtime call was, read from the types in its error's
/// chain: the limiter's [`MemoryRefused`] and wasmtime's [`wasmtime::Trap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CallFailure {
    /// The epoch deadline interrupted the guest (`Trap::Interrupt`).
    Deadline,
    /// The limiter refused to grow linear memory.
    OutOfMemory,
    /// Any other trap of the guest (a bug: unreachable, bounds, ...).
    Trap(wasmtime::Trap),
    /// An error that is no trap, such as one a host function returned.
    Other,
}

impl CallFailure {
    /// Classifies `error`. The refusal is checked first: it is the cause
    /// whatever wasmtime wraps around it.
    pub(super) fn of(error: &wasmtime::Error) -> CallFailure {
        if error.downcast_ref::<MemoryRefused>().is_some() {
            return CallFailure::OutOfMemory;
        }
        match error.downcast_ref::<wasmtime::Trap>() {
            Some(wasmtime::Trap::Interrupt) => CallFailure::Deadline,
            Some(trap) => CallFailure::Trap(*trap),
            None => CallFailure::Other,
        }
    }
}
