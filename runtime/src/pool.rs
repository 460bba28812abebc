//! A policy set's instances: each holds the compiled set, is used by one
//! request at a time within its namespace's turn and the pool's, and is
//! dropped when it traps; the host side of every call into the engine.

use super::idle::Idle;
use super::*;

/// The turns a call holds while it uses an instance: the pool's and its
/// namespace's, given back together when the call ends.
pub(super) struct Turn<'a> {
    _pool: tokio::sync::SemaphorePermit<'a>,
    _namespace: turns::Turn<'a>,
}

/// A live instance with its policy set.
pub(crate) struct Instance {
    /// Calls served so far (see [`Limits::instance_calls`]).
    calls: u64,
    pub(super) store: Store<HostState>,
    pub(super) module: bindings::EngineContract,
    pub(super) set: ResourceAny,
}

/// What loaded, for readiness and logs.
pub struct Summary {
    pub policies: Vec<wit::PolicyInfo>,
    pub diagnostics: Vec<wit::Diagnostic>,
    /// The policy documents that did not load; each denies in its scope.
    pub rejected: Vec<wit::RejectedPolicy>,
}

/// Which policies a route reaches: its scope and the names in its path
/// (none means every policy of the scope).
pub(crate) struct Reach<'a> {
    /// The request's namespace on `/nivpol/...` routes; none on `/ivpol/...`.
    pub namespace: Option<&'a str>,
    pub names: &'a [String],
}

impl Reach<'_> {
    /// Whether the policy `name` (of `namespace`, none for a cluster
    /// policy) is in reach.
    pub(crate) fn reaches(&self, name: &str, namespace: Option<&str>) -> bool {
        let named = self.names.is_empty() || self.names.iter().any(|n| n == name);
        named && namespace == self.namespace
    }
}

/// Instances of one policy set.
pub struct Pool {
    runtime: Arc<Runtime>,
    documents: Vec<wit::Document>,
    idle: Mutex<Idle<Instance>>,
    active: tokio::sync::Semaphore,
    /// Each namespace's share of `active`.
    turns: turns::Turns,
    summary: Summary,
    /// The instance that answers for the requests `review` gave none for
    /// ([`Pool::failure_answer`]), outside the pool's and the namespaces'
    /// turns: a busy or trapping pool must still have the component word
    /// its failures. Made at the first failure, dropped when it traps.
    reserve: tokio::sync::Mutex<Option<Instance>>,
}

/// How long a failure answer may take, waiting for the reserve included:
/// the request has usually spent its deadline already.
pub(crate) const FAILURE_ANSWER_DEADLINE: Duration = Duration::from_secs(1);

impl Pool {
    /// Loads `documents` into a first instance, which also yields the summary.
    pub async fn load(runtime: Arc<Runtime>, documents: Vec<Document>) -> Result<Pool> {
        let documents: Vec<wit::Document> = documents
            .into_iter()
            .map(|d| wit::Document {
                source: d.source,
                content: d.content,
                refused: d.refused,
            })
            .collect();
        let mut first = new_instance(&runtime, &documents).await?;
        let engine = first.module.ivpol_admission_engine().policy_set();
        let policies = engine.call_policies(&mut first.store, first.set).await?;
        let diagnostics = engine.call_diagnostics(&mut first.store, first.set).await?;
        let rejected = engine.call_rejected(&mut first.store, first.set).await?;
        let limits = runtime.limits;
        let alive = limits.max_instances.max(limits.instances).max(1);
        let mut idle = Idle::new();
        idle.give(first);
        let pool = Pool {
            runtime,
            documents,
            idle: Mutex::new(idle),
            active: tokio::sync::Semaphore::new(alive),
            turns: turns::Turns::new(limits.namespace_instances),
            summary: Summary {
                policies,
                diagnostics,
                rejected,
            },
            reserve: tokio::sync::Mutex::new(None),
        };
        Ok(pool)
    }

    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Runs `webhook-configurations` in a pooled instance: the outer error
    /// is a trap, the inner one the component's refusal.
    pub async fn webhook_configurations(
        &self,
        options: engine::WebhookOptions,
    ) -> Result<Result<String, String>> {
        let deadline = Duration::from_secs(10);
        let (mut inst, _turn) = self.acquire(deadline, "").await?;
        arm_deadline(&mut inst, deadline);
        let engine = inst.module.ivpol_admission_engine().policy_set();
        let out = engine
            .call_webhook_configurations(&mut inst.store, inst.set, &options)
            .await;
        Ok(self.settle(inst, out, deadline)?)
    }

    /// Runs `status-conditions`: each queried policy's
    /// `status.conditionStatus` (JSON), as Kyverno sets it, stamped `now`.
    pub async fn status_conditions(
        &self,
        queries: &[wit::StatusQuery],
        now: &str,
    ) -> Result<Vec<String>> {
        let deadline = Duration::from_secs(10);
        let (mut inst, _turn) = self.acquire(deadline, "").await?;
        arm_deadline(&mut inst, deadline);
        let engine = inst.module.ivpol_admission_engine().policy_set();
        let out = engine
            .call_status_conditions(&mut inst.store, inst.set, queries, now)
            .await;
        Ok(self.settle(inst, out, deadline)?)
    }

    /// Runs `reports.shape`: `outcomes` in Kyverno's `shape`, results
    /// stamped `seconds`.
    pub async fn shape(
        &self,
        outcomes: &[reports::Outcome],
        shape: &reports::ReportShape,
        seconds: u64,
    ) -> Result<Vec<String>> {
        let deadline = Duration::from_secs(10);
        let (mut inst, _turn) = self.acquire(deadline, "").await?;
        arm_deadline(&mut inst, deadline);
        let shapes = inst.module.ivpol_admission_reports();
        let out = shapes
            .call_shape(&mut inst.store, outcomes, shape, seconds)
            .await;
        Ok(self.settle(inst, out, deadline)?)
    }

    /// Runs `reports.merge-resource-report`: the report about `resource`
    /// with its `older` results and the `newer` ones merged.
    pub async fn merge_resource_report(
        &self,
        placement: &reports::Placement,
        resource: &reports::ResourceRef,
        older: &[String],
        newer: &[String],
    ) -> Result<Option<String>> {
        let deadline = Duration::from_secs(10);
        let (mut inst, _turn) = self.acquire(deadline, "").await?;
        arm_deadline(&mut inst, deadline);
        let shapes = inst.module.ivpol_admission_reports();
        let out = shapes
            .call_merge_resource_report(&mut inst.store, placement, resource, older, newer)
            .await;
        Ok(self.settle(inst, out, deadline)?)
    }

    /// An instance and the turns to use it: one of `namespace`'s (at most
    /// `namespace_instances` at once), then one of the pool's (at most
    /// `max_instances`), waiting for both no longer than `deadline`.
    pub(super) async fn acquire(
        &self,
        deadline: Duration,
        namespace: &str,
    ) -> Result<(Instance, Turn<'_>), Failure> {
        let (instance, turn, _) = self
            .acquire_since(Instant::now(), deadline, namespace)
            .await?;
        Ok((instance, turn))
    }

    /// [`Pool::acquire`] for a request whose `deadline` began at `started`,
    /// and when the instance was got: the clock is read once before the
    /// wait and once after it (eight reads on a cache hit's way were 1.7%
    /// of the server's CPU, docs/performance.md).
    async fn acquire_since(
        &self,
        started: Instant,
        deadline: Duration,
        namespace: &str,
    ) -> Result<(Instance, Turn<'_>, Instant), Failure> {
        let until = tokio::time::Instant::from_std(started + deadline);
        let Some(turn) = self.turns.take(namespace, until).await else {
            metrics().observe_instance_wait(namespace, started.elapsed());
            return Err(Failure::NamespaceBusy {
                namespace: namespace.to_string(),
                turns: self.turns.per_namespace(),
                deadline,
            });
        };
        let permit = self.pool_turn(until, deadline).await?;
        let mut got = Instant::now();
        metrics().observe_instance_wait(namespace, got - started);
        let idle = {
            let mut idle = self
                .idle
                .lock()
                .map_err(|_| Failure::trap("the instance pool lock is poisoned"))?;
            let taken = idle.take();
            metrics().instances_idle.set(idle.len() as i64);
            taken
        };
        let instance = match idle {
            Some(i) => i,
            None => {
                let fresh = self.fresh_instance().await?;
                got = Instant::now();
                fresh
            }
        };
        metrics()
            .instance_acquire
            .observe((got - started).as_secs_f64());
        let turns = Turn {
            _pool: permit,
            _namespace: turn,
        };
        Ok((instance, turns, got))
    }

    /// One of the pool's turns, waiting until `until` when none is free
    /// (a free one is taken without a timer: tokio's takes its wheel's
    /// lock even when it never waited).
    async fn pool_turn(
        &self,
        until: tokio::time::Instant,
        deadline: Duration,
    ) -> Result<tokio::sync::SemaphorePermit<'_>, Failure> {
        use tokio::sync::TryAcquireError;
        let closed = || Failure::trap("the instance pool is closed");
        match self.active.try_acquire() {
            Ok(permit) => Ok(permit),
            Err(TryAcquireError::Closed) => Err(closed()),
            Err(TryAcquireError::NoPermits) => {
                tokio::time::timeout_at(until, self.active.acquire())
                    .await
                    .map_err(|_| Failure::Busy(deadline))?
                    .map_err(|_| closed())
            }
        }
    }

    /// A new instance of the policy set.
    async fn fresh_instance(&self) -> Result<Instance, Failure> {
        new_instance(&self.runtime, &self.documents)
            .await
            .map_err(|e| {
                Failure::trap(format!(
                    "no policy instance could be created: {}",
                    super::load_failure(&e)
                ))
            })
    }

    /// Back to the pool after a call that did not trap, its cache claims
    /// released (a claim never outlives the call that made it).
    fn release(&self, mut instance: Instance) {
        instance.store.data_mut().claims.release_all();
        instance.calls += 1;
        if instance.calls >= self.runtime.limits.instance_calls {
            // A store keeps a little host-side bookkeeping per call that
            // only its drop frees (measured by `cargo xtask soak`: ~120
            // bytes a call): a fresh instance bounds it, and resets the
            // guest heap's fragmentation too.
            metrics().instances_retired.inc();
            return;
        }
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < self.runtime.limits.instances {
                idle.give(instance);
            }
            metrics().instances_idle.set(idle.len() as i64);
        }
    }

    /// A call's outcome: the instance goes back to the pool when the call
    /// returned, and is dropped when it trapped (its state is then unknown).
    pub(super) fn settle<T>(
        &self,
        instance: Instance,
        out: wasmtime::Result<T>,
        deadline: Duration,
    ) -> Result<T, Failure> {
        match out {
            Ok(v) => {
                self.release(instance);
                Ok(v)
            }
            Err(error) => Err(match CallFailure::of(&error) {
                CallFailure::Deadline => Failure::Deadline(deadline),
                CallFailure::OutOfMemory => {
                    Failure::OutOfMemory(instance.store.data().limits.limit)
                }
                CallFailure::Trap(trap) => Failure::Trap {
                    why: format!("the policy component trapped: {trap}"),
                    detail: format!("{error:?}"),
                },
                CallFailure::Other => Failure::Trap {
                    why: format!("the policy component failed: {}", first_line(&error)),
                    detail: format!("{error:?}"),
                },
            }),
        }
    }

    /// Runs `review` (one AdmissionReview body on `route`) in a pooled
    /// instance within `deadline`, the component asking `namespaces` for
    /// the request's namespace if it needs it. `namespace` is the request's
    /// (`request.namespace`, empty for a cluster-scoped object): its
    /// requests hold at most their namespace's share of the instances.
    /// The deadline runs from `started`.
    pub(crate) async fn review(
        &self,
        route: wit::Route,
        body: &[u8],
        namespaces: Arc<dyn Namespaces>,
        namespace: &str,
        (started, deadline): (Instant, Duration),
    ) -> Result<Result<wit::Answer, wit::Unjudgeable>, Failure> {
        let (mut inst, _turn, got) = self.acquire_since(started, deadline, namespace).await?;
        // The wait for a turn counts against the request's deadline: the
        // API server stops waiting at it, whoever held the instances.
        let remaining = deadline.saturating_sub(got - started);
        arm_deadline_at(&mut inst, got, remaining);
        inst.store.data_mut().namespaces = Some(namespaces);
        let engine = inst.module.ivpol_admission_engine().policy_set();
        let call = engine.call_review(&mut inst.store, inst.set, &route, body);
        let out = backstop(remaining, call)
            .await
            .map_err(|_| Failure::Deadline(deadline))?;
        // The generation is not kept past its request.
        inst.store.data_mut().namespaces = None;
        self.settle(inst, out, deadline)
    }

    /// Runs `failure-answer` for the request `head` is of, on `route`,
    /// which `review` gave no answer for because of `cause`, on the
    /// reserve instance, within [`FAILURE_ANSWER_DEADLINE`]. The error is
    /// why even that gave none: the host then denies on its own.
    pub async fn failure_answer(
        &self,
        route: wit::Route,
        head: &wit::RequestHead,
        cause: &str,
    ) -> Result<wit::FailureReply, Failure> {
        let deadline = FAILURE_ANSWER_DEADLINE;
        let started = Instant::now();
        let mut reserve = tokio::time::timeout(deadline, self.reserve.lock())
            .await
            .map_err(|_| Failure::Busy(deadline))?;
        let mut inst = match reserve.take() {
            Some(inst) => inst,
            None => self.fresh_instance().await?,
        };
        let remaining = deadline.saturating_sub(started.elapsed());
        arm_deadline(&mut inst, remaining);
        let engine = inst.module.ivpol_admission_engine().policy_set();
        let call = engine.call_failure_answer(&mut inst.store, inst.set, &route, head, cause);
        let out = backstop(remaining, call).await?;
        match out {
            Ok(answer) => {
                inst.store.data_mut().claims.release_all();
                inst.calls += 1;
                if inst.calls < self.runtime.limits.instance_calls {
                    *reserve = Some(inst);
                }
                Ok(answer)
            }
            Err(error) => Err(Failure::Trap {
                why: format!("the failure answer failed: {}", first_line(&error)),
                detail: format!("{error:?}"),
            }),
        }
    }

    /// Runs `review-policy` (the policy-validation webhook) on one
    /// AdmissionReview body in a pooled instance within `deadline`, on a
    /// turn of the object's `namespace`.
    pub async fn review_policy(
        &self,
        body: &[u8],
        namespace: &str,
        deadline: Duration,
    ) -> Result<Result<wit::Answer, wit::Unjudgeable>, Failure> {
        let (mut inst, _turn) = self.acquire(deadline, namespace).await?;
        arm_deadline(&mut inst, deadline);
        let engine = inst.module.ivpol_admission_engine().policy_set();
        let call = engine.call_review_policy(&mut inst.store, inst.set, body);
        let out = backstop(deadline, call).await?;
        self.settle(inst, out, deadline)
    }

    /// Runs `evaluate-json` (JSON-mode policies) in a pooled instance.
    pub async fn evaluate_json(
        &self,
        payload: String,
        deadline: Duration,
    ) -> Result<Result<wit::Verdict, String>> {
        let (mut inst, _turn) = self.acquire(deadline, "").await?;
        arm_deadline(&mut inst, deadline);
        let engine = inst.module.ivpol_admission_engine().policy_set();
        let out = engine
            .call_evaluate_json(&mut inst.store, inst.set, &payload)
            .await;
        Ok(self.settle(inst, out, deadline)?)
    }

    /// Runs `evaluate` (one resource outside admission, for `ivpol apply`,
    /// `test` and `scan`) in a pooled instance within `deadline`.
    pub async fn evaluate(
        &self,
        resource: String,
        operation: wit::Operation,
        namespace: Option<String>,
        background: bool,
        deadline: Duration,
    ) -> Result<Result<wit::Verdict, String>> {
        let ns = namespace.clone().unwrap_or_default();
        let (mut inst, _turn) = self.acquire(deadline, &ns).await?;
        arm_deadline(&mut inst, deadline);
        let engine = inst.module.ivpol_admission_engine().policy_set();
        let call = engine.call_evaluate(
            &mut inst.store,
            inst.set,
            &resource,
            operation,
            namespace.as_deref(),
            background,
        );
        let out = backstop(deadline, call).await?;
        Ok(self.settle(inst, out, deadline)?)
    }

    /// The request deadline: the longest `webhookConfiguration.timeoutSeconds`
    /// among the policies a route names (all policies when it names none),
    /// as the API server would wait for that webhook. Default 10 s.
    pub fn deadline(&self, names: &[String]) -> Duration {
        let secs = self
            .summary
            .policies
            .iter()
            .filter(|p| names.is_empty() || names.contains(&p.name))
            .map(|p| p.timeout_seconds)
            .max()
            .unwrap_or(10);
        Duration::from_secs(u64::from(secs.max(1)))
    }
}

/// Host waits are bounded by the hook's deadline; this bounds the whole call
/// too, as a backstop, a little after the epoch deadline.
pub(super) async fn backstop<F: std::future::Future>(
    deadline: Duration,
    call: F,
) -> Result<F::Output, Failure> {
    tokio::time::timeout(deadline + 2 * EPOCH_GRACE, call)
        .await
        .map_err(|_| Failure::Deadline(deadline))
}

/// Registry calls get 90% of the budget, so that a slow registry ends as the
/// guest's own timeout error (an `error` result, mapped like any other); the
/// epoch deadline, a little later, only stops runaway guest code.
///
/// Each call starts with no registry secrets named: a recycled instance
/// does not present the last call's (`registry-credentials`); nor does it
/// reuse the last call's credential identities, so a rotated secret keys
/// the next request afresh, except those of credentials fixed for the
/// process's life (the operator's `auths` entries, anonymous access).
pub(super) fn arm_deadline(inst: &mut Instance, deadline: Duration) {
    arm_deadline_at(inst, Instant::now(), deadline);
}

/// [`arm_deadline`] with the clock as read at `now`.
fn arm_deadline_at(inst: &mut Instance, now: Instant, deadline: Duration) {
    inst.store.set_epoch_deadline(ticks(deadline + EPOCH_GRACE));
    let hooks = &mut inst.store.data_mut().hooks;
    hooks.deadline = now + deadline.mul_f32(0.9);
    hooks.presented = Default::default();
    hooks.identities.start_call();
}

/// The first line of an error's chain: no backtrace.
fn first_line(error: &wasmtime::Error) -> String {
    let text = format!("{error:#}");
    text.lines().next().unwrap_or_default().to_string()
}

async fn new_instance(runtime: &Runtime, documents: &[wit::Document]) -> Result<Instance> {
    let (mut store, module) = runtime.instantiate().await?;
    metrics().instances_created.inc();
    let constructed = module
        .ivpol_admission_engine()
        .policy_set()
        .call_constructor(&mut store, documents, &runtime.load_options())
        .await;
    let set = constructed
        .map_err(anyhow::Error::from)
        .context("loading policies in the component")?;
    Ok(Instance {
        calls: 0,
        store,
        module,
        set,
    })
}
