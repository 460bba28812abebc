//! The validate phase (`HandleValidating`), and the results of one
//! request's policies with `required` enforced across them.

use super::evaluate::{self, Input, Outcome};
use super::{
    admission_bindings, bindings_for, constraints_match, keys, match_input, required, result,
    results, verifier, within_budget, NamespaceInfo, PolicyResult, Status, Verdict,
};
use crate::admission::Request;
use crate::cel::resource_lib::ResourceSource;
use crate::oci::{Budget, Transport};
use crate::policy::{self, CompiledPolicy};
use std::sync::Arc;

/// The validate phase (`HandleValidating`).
pub(super) fn validate(
    policies: &[&CompiledPolicy],
    req: &Request,
    ns: &NamespaceInfo,
    transport: Arc<dyn Transport + Send + Sync>,
    budget: &Budget,
    host: &keys::HostServices,
    resources: &Option<Arc<dyn ResourceSource>>,
) -> Verdict {
    let builder = admission_bindings(req, ns);
    let matching = match_input(req, ns);
    let lists = req.resource_object().image_lists();
    let mut collected = Collected::default();
    for p in policies.iter().copied() {
        // Autogen variants share the policy's name; one result per name.
        if collected.judged.contains(p) {
            continue;
        }
        match constraints_match(p, req, ns, &matching) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(error) => {
                let none = verifier::DecisionLog::default();
                collected.record(p, Outcome::Error(error), &none, |e| e);
                continue;
            }
        }
        let log = verifier::DecisionLog::default();
        let input = Input {
            bindings: bindings_for(
                p,
                &builder,
                &transport,
                host,
                &collected.verifications,
                &log,
                resources.as_ref(),
            ),
            lists: &lists,
        };
        let outcome = within_budget(budget, || evaluate::evaluate(p, &input));
        collected.record(p, outcome, &log, |e| e);
    }
    results::verdict(collected.finish(), None)
}

/// The results of one request's policies, and the passes `required` must
/// re-check once every policy has run.
#[derive(Default)]
pub(super) struct Collected<'p> {
    results: Vec<PolicyResult>,
    /// The name and namespace of each result's policy.
    judged: Judged<'p>,
    /// Index of each passing result, with its matched images.
    passed: Vec<(usize, Vec<String>)>,
    /// What the request's policies verified, shared by all of them.
    pub(super) verifications: verifier::SharedVerifications,
}

/// The policies (by name and namespace) that already have a result: a
/// policy's autogen variants share its name, and it gets one result.
/// A few are looked through in place; more make a set.
#[derive(Default)]
pub(super) struct Judged<'p> {
    few: Vec<PolicyKey<'p>>,
    many: Option<super::FastSet<PolicyKey<'p>>>,
}

type PolicyKey<'p> = (&'p str, Option<&'p str>);

/// The most results looked through one by one: a set (an allocation and
/// a seeded hasher) cost more than it saved for a request of a few
/// policies.
const FEW_JUDGED: usize = 8;

impl<'p> Judged<'p> {
    pub(super) fn contains(&self, p: &CompiledPolicy) -> bool {
        self.has(&(p.name.as_str(), p.namespace.as_deref()))
    }

    pub(super) fn insert(&mut self, p: &'p CompiledPolicy) {
        self.add((p.name.as_str(), p.namespace.as_deref()));
    }

    fn has(&self, key: &PolicyKey<'_>) -> bool {
        match &self.many {
            Some(set) => set.contains(key),
            None => self.few.contains(key),
        }
    }

    fn add(&mut self, key: PolicyKey<'p>) {
        match &mut self.many {
            Some(set) => {
                set.insert(key);
            }
            None if self.few.len() < FEW_JUDGED => self.few.push(key),
            None => {
                let mut set: super::FastSet<_> = self.few.drain(..).collect();
                set.insert(key);
                self.many = Some(set);
            }
        }
    }
}

impl<'p> Collected<'p> {
    /// Records `outcome` with what `log` holds; `error` words an evaluation
    /// error for this path.
    pub(super) fn record(
        &mut self,
        p: &'p CompiledPolicy,
        outcome: Outcome,
        log: &verifier::DecisionLog,
        error: impl Fn(String) -> String,
    ) {
        let r = match outcome {
            Outcome::NotMatched => return,
            Outcome::Pass {
                annotations,
                matched,
            } => {
                if p.spec.required() {
                    self.passed.push((self.results.len(), matched));
                }
                result(p, Status::Pass, "success".into(), annotations)
            }
            Outcome::Fail {
                message,
                annotations,
            } => result(p, Status::Fail, message, annotations),
            Outcome::Error(e) => result(p, Status::Error, error(e.to_string()), vec![]),
            Outcome::Excepted { keys, report_as } => {
                let status = match report_as {
                    policy::exception::ReportAs::Skip => Status::Skip,
                    policy::exception::ReportAs::Pass => Status::Pass,
                };
                let message = format!(
                    "rule is skipped due to policy exception: {}",
                    keys.join(", ")
                );
                let mut r = result(p, status, message, vec![]);
                r.exceptions = keys;
                r
            }
        };
        let mut r = r;
        r.verifications = verifier::take(log);
        self.judged.insert(p);
        self.results.push(r);
    }

    /// The results, with `required` enforced across all of them.
    pub(super) fn finish(mut self) -> Vec<PolicyResult> {
        let verifications = self.verifications.lock().unwrap_or_else(|p| p.into_inner());
        enforce_required(&mut self.results, self.passed, &verifications);
        drop(verifications);
        self.results
    }
}

/// `required` runs after every policy, so checks made by any policy count.
/// `passed` holds the index of each passing result and its matched images.
fn enforce_required(
    results: &mut [PolicyResult],
    passed: Vec<(usize, Vec<String>)>,
    verifications: &required::Verifications,
) {
    for (index, matched) in passed {
        if let Err(unverified) = verifications.enforce(&matched) {
            if let Some(r) = results.get_mut(index) {
                r.status = Status::Fail;
                r.message = unverified.to_string();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Judged;

    /// A policy is known by its name and namespace alike, few or many.
    #[test]
    fn judged_policies_are_found_by_name_and_namespace_few_or_many() {
        let names: Vec<String> = (0..3 * super::FEW_JUDGED)
            .map(|i| format!("p{i}"))
            .collect();
        let mut judged = Judged::default();
        for (i, name) in names.iter().enumerate() {
            assert!(!judged.has(&(name, None)));
            judged.add((name, None));
            judged.add((name, Some("team")));
            let seen = &names[..=i];
            assert!(seen
                .iter()
                .all(|n| judged.has(&(n, None)) && judged.has(&(n, Some("team")))));
            assert!(!judged.has(&(name, Some("other"))) && !judged.has(&("other", None)));
        }
        assert!(judged.many.is_some());
    }
}
