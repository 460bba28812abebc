//! After a trap: which of the request's policies caused it.
//!
//! A trap (or the memory limit) loses the instance and every result it was
//! computing. When the route reaches more than one policy, the request is
//! judged again on fresh instances, so that one policy's trap does not
//! take the others' verdicts with it:
//!
//! 1. with every policy in reach set aside: if that traps too, the body
//!    itself is at fault (a parse that needs more than the memory limit)
//!    and every policy gets the error, as before, after one extra call;
//! 2. each policy alone: those that trap alone are set aside;
//! 3. the route again with those set aside (WIT `route.trapped`): the
//!    component gives each an `error` result and judges the rest.
//!
//! The extra calls share the request's deadline and its namespace's turns,
//! and at most [`MAX_ISOLATED`] policies are tried one by one, so a body
//! that traps costs a tenant's own share and never more than the deadline.

use super::pool::{Pool, Reach};
use super::{wit, Failure, Namespaces};
use crate::metrics::{metrics, PolicyLabels};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Past this many policies in reach, a trap errors them all without
/// trying each (each try is a fresh instance).
pub(crate) const MAX_ISOLATED: usize = 16;

type Judged = Result<Result<wit::Answer, wit::Unjudgeable>, Failure>;

/// One request as [`Pool::judge`] was given it, for the calls after a trap.
struct Request<'a> {
    body: &'a [u8],
    namespaces: Arc<dyn Namespaces>,
    namespace: &'a str,
    started: Instant,
    deadline: Duration,
}

impl Request<'_> {
    fn remaining(&self) -> Duration {
        self.deadline.saturating_sub(self.started.elapsed())
    }
}

impl Pool {
    /// [`Pool::review`], and after a trap that one policy may have caused,
    /// the search above for the policies that trap alone.
    pub async fn judge(
        &self,
        route: wit::Route,
        body: &[u8],
        namespaces: Arc<dyn Namespaces>,
        namespace: &str,
        deadline: Duration,
    ) -> Judged {
        let started = Instant::now();
        let first = self
            .review(
                route.clone(),
                body,
                namespaces.clone(),
                namespace,
                (started, deadline),
            )
            .await;
        let failure = match first {
            Err(f) if f.may_be_one_policys() => f,
            other => return other,
        };
        let reach = self.reach(&route, namespace);
        if !(2..=MAX_ISOLATED).contains(&reach.len()) {
            return Err(failure);
        }
        let request = Request {
            body,
            namespaces,
            namespace,
            started,
            deadline,
        };
        match self.isolate(route, &reach, &request, &failure).await {
            Some(answer) => Ok(answer),
            None => Err(failure),
        }
    }

    /// The names of the policies `route` reaches for a request in
    /// `namespace`, as the component scopes them.
    fn reach(&self, route: &wit::Route, namespace: &str) -> Vec<String> {
        let reach = Reach {
            namespace: route.namespaced.then_some(namespace),
            names: &route.names,
        };
        let mut names: Vec<String> = (self.summary().policies.iter())
            .filter(|p| reach.reaches(&p.name, p.namespace.as_deref()))
            .map(|p| p.name.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Steps 1 to 3 of the module's search; none when the trap cannot be
    /// pinned on some policies (the body traps alone, a try ran out of
    /// time, or the last call trapped again).
    async fn isolate(
        &self,
        route: wit::Route,
        reach: &[String],
        request: &Request<'_>,
        failure: &Failure,
    ) -> Option<Result<wit::Answer, wit::Unjudgeable>> {
        let aside = |names: &[String], cause: &str| -> Vec<wit::TrappedPolicy> {
            (names.iter())
                .map(|name| wit::TrappedPolicy {
                    name: name.clone(),
                    cause: cause.to_string(),
                })
                .collect()
        };
        let all_aside = wit::Route {
            trapped: aside(reach, &failure.to_string()),
            ..route.clone()
        };
        // Its answer is not the request's: only whether it traps.
        let _unjudged = self.again(all_aside, request).await.ok()?;
        let mut trapped = Vec::new();
        for name in reach {
            let alone = wit::Route {
                names: vec![name.clone()],
                ..route.clone()
            };
            match self.again(alone, request).await {
                Ok(_) => {}
                Err(f) if f.may_be_one_policys() => {
                    tracing::error!(policy = %name, namespace = %request.namespace,
                        "the policy trapped the component on this request: {}", f.detail());
                    count_trap(name, &route, request.namespace);
                    trapped.extend(aside(std::slice::from_ref(name), &f.to_string()));
                }
                Err(_) => return None,
            }
        }
        let rest = wit::Route { trapped, ..route };
        self.again(rest, request).await.ok()
    }

    /// One more call for the same request, within what is left of its
    /// deadline.
    async fn again(&self, route: wit::Route, request: &Request<'_>) -> Judged {
        let remaining = request.remaining();
        if remaining.is_zero() {
            return Err(Failure::Deadline(request.deadline));
        }
        let (body, namespace) = (request.body, request.namespace);
        self.review(
            route,
            body,
            request.namespaces.clone(),
            namespace,
            (Instant::now(), remaining),
        )
        .await
    }
}

fn count_trap(policy: &str, route: &wit::Route, namespace: &str) {
    let labels = PolicyLabels {
        policy: policy.to_string(),
        namespace: match route.namespaced {
            true => namespace.to_string(),
            false => String::new(),
        },
    };
    metrics().policy_traps.get_or_create(&labels).inc();
}
