//! The registry data budget of one evaluation: every byte of every body
//! read from a registry (manifests, blobs, referrer indexes, TUF metadata)
//! during one `admit` / `evaluate` call is counted against one limit, so
//! that no registry, however many referrers or layers it serves, can make
//! an instance hold or read more than [`MAX_REGISTRY_BYTES_PER_EVALUATION`].
//!
//! [`Budgeted`] wraps the call's transport. Each fetch reserves up to its
//! own per-object limit from what is left before it starts and gives back
//! what it did not use, so fetches running at the same time can never read
//! more than the budget between them; at most [`MAX_FETCHES_IN_FLIGHT`]
//! run at once. A fetch that would go over is refused with
//! [`TransportError::BudgetExceeded`], and the budget remembers it, so the
//! engine can turn the evaluation of the policy that hit it into an error
//! even when an expression swallowed the failed verification.

use super::transport::{host_of, HttpRequest, HttpResponse, Transport, TransportError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes of registry bodies one evaluation may read in total.
pub const MAX_REGISTRY_BYTES_PER_EVALUATION: usize = 64 << 20;

/// JSON values from registry data one evaluation may parse into trees, in
/// total. A body's bytes do not bound its tree (`json_shape`): 4 MiB of
/// dense JSON is millions of values at 32 to 100 bytes each, and parsed
/// image data and verified payloads are kept for the whole evaluation.
/// About 30 MB of trees at most, next to the bodies, within an instance's
/// memory.
pub const MAX_PARSED_VALUES_PER_EVALUATION: usize = 300_000;

/// Registry fetches one evaluation may have in flight at once. The engine
/// is sequential today (one at a time); a concurrent version must keep to
/// this, since the memory an evaluation holds for bodies being read is at
/// most this many per-object limits (and never more than the budget).
pub const MAX_FETCHES_IN_FLIGHT: usize = 4;

/// What is left of one evaluation's budget.
#[derive(Debug)]
pub struct Budget {
    limit: usize,
    remaining: AtomicUsize,
    value_limit: usize,
    values_remaining: AtomicUsize,
    /// The first refusal, which names the budget that ran out.
    first_refusal: std::sync::Mutex<Option<TransportError>>,
    in_flight: AtomicUsize,
    /// Fetches refused because the budget ran out.
    refusals: AtomicUsize,
}

impl Budget {
    /// A fresh budget of `limit` bytes and `value_limit` parsed JSON values.
    pub fn new(limit: usize, value_limit: usize) -> Budget {
        Budget {
            limit,
            remaining: AtomicUsize::new(limit),
            value_limit,
            values_remaining: AtomicUsize::new(value_limit),
            first_refusal: std::sync::Mutex::new(None),
            in_flight: AtomicUsize::new(0),
            refusals: AtomicUsize::new(0),
        }
    }

    /// The budget's size in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes read so far (including reservations of fetches in flight).
    pub fn used(&self) -> usize {
        self.limit
            .saturating_sub(self.remaining.load(Ordering::SeqCst))
    }

    /// How many fetches were refused so far; compare two readings to know
    /// whether something in between hit the budget.
    pub fn refusals(&self) -> usize {
        self.refusals.load(Ordering::SeqCst)
    }

    /// The first refusal's error, naming the budget that ran out.
    pub fn exceeded_message(&self) -> String {
        let first = self.first_refusal.lock().unwrap_or_else(|p| p.into_inner());
        first
            .clone()
            .unwrap_or(TransportError::BudgetExceeded { limit: self.limit })
            .to_string()
    }

    /// Takes `values` from the parsed-values budget, all or nothing.
    pub fn charge_values(&self, values: usize) -> Result<(), TransportError> {
        let taken =
            self.values_remaining
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                    left.checked_sub(values)
                });
        match taken {
            Ok(_) => Ok(()),
            Err(_) => {
                // Nothing more is parsed once it ran out.
                self.values_remaining.store(0, Ordering::SeqCst);
                Err(self.refuse(TransportError::ValueBudgetExceeded {
                    limit: self.value_limit,
                }))
            }
        }
    }

    /// Takes up to `want` bytes from what is left; 0 when nothing is.
    fn reserve(&self, want: usize) -> usize {
        let mut granted = 0;
        let _ = self
            .remaining
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                granted = want.min(left);
                Some(left - granted)
            });
        granted
    }

    fn refund(&self, bytes: usize) {
        self.remaining.fetch_add(bytes, Ordering::SeqCst);
    }

    fn refuse(&self, error: TransportError) -> TransportError {
        self.refusals.fetch_add(1, Ordering::SeqCst);
        let mut first = self.first_refusal.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert_with(|| error.clone());
        error
    }

    fn bytes_refused(&self) -> TransportError {
        self.refuse(TransportError::BudgetExceeded { limit: self.limit })
    }
}

/// A transport that charges every body it reads to a [`Budget`].
pub struct Budgeted {
    /// The transport requests are sent through.
    pub inner: Arc<dyn Transport + Send + Sync>,
    /// The budget every body read is charged to.
    pub budget: Arc<Budget>,
}

impl Budgeted {
    /// `inner`, charged to a fresh budget of `limit` bytes and
    /// `value_limit` parsed JSON values.
    pub fn new(
        inner: Arc<dyn Transport + Send + Sync>,
        limit: usize,
        value_limit: usize,
    ) -> Budgeted {
        Budgeted {
            inner,
            budget: Arc::new(Budget::new(limit, value_limit)),
        }
    }
}

/// Holds one of the [`MAX_FETCHES_IN_FLIGHT`] slots.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Budgeted {
    /// A slot and a byte reservation for one request, or why not.
    fn admit(
        &self,
        request: &HttpRequest,
        max_body: usize,
    ) -> Result<Admitted<'_>, TransportError> {
        let budget = &self.budget;
        if budget.in_flight.fetch_add(1, Ordering::SeqCst) >= MAX_FETCHES_IN_FLIGHT {
            budget.in_flight.fetch_sub(1, Ordering::SeqCst);
            return Err(TransportError::Failed {
                host: host_of(&request.url),
                message: format!("more than {MAX_FETCHES_IN_FLIGHT} registry fetches in flight"),
            });
        }
        let slot = Slot(&budget.in_flight);
        let granted = budget.reserve(max_body);
        if granted == 0 && max_body > 0 {
            return Err(budget.bytes_refused());
        }
        Ok(Admitted {
            _slot: slot,
            granted,
            max_body,
        })
    }

    /// Settles a reservation with what the request read.
    fn settle(
        &self,
        admitted: &Admitted<'_>,
        outcome: Result<HttpResponse, TransportError>,
    ) -> Result<HttpResponse, TransportError> {
        let budget = &self.budget;
        let granted = admitted.granted;
        match outcome {
            Ok(response) => {
                budget.refund(granted.saturating_sub(response.body.len()));
                Ok(response)
            }
            // Too large for what was left, though within the object's own
            // limit: the budget, not the object, is what ran out.
            Err(TransportError::TooLarge { .. }) if granted < admitted.max_body => {
                // What was read is gone; keep it charged.
                Err(budget.bytes_refused())
            }
            Err(e) => {
                budget.refund(granted);
                Err(e)
            }
        }
    }
}

/// A request let through: its in-flight slot (held until it is settled)
/// and the bytes reserved for its answer.
struct Admitted<'a> {
    _slot: Slot<'a>,
    granted: usize,
    max_body: usize,
}

impl Transport for Budgeted {
    fn send(&self, request: &HttpRequest, max_body: usize) -> Result<HttpResponse, TransportError> {
        let admitted = self.admit(request, max_body)?;
        let outcome = self.inner.send(request, admitted.granted);
        self.settle(&admitted, outcome)
    }

    /// Each request takes its slot and reservation before any is sent, so
    /// requests in flight together stay within both bounds.
    fn send_each(
        &self,
        requests: &[(HttpRequest, usize)],
    ) -> Vec<Result<HttpResponse, TransportError>> {
        let admitted: Vec<_> = requests
            .iter()
            .map(|(request, max_body)| self.admit(request, *max_body))
            .collect();
        let to_send: Vec<(HttpRequest, usize)> = requests
            .iter()
            .zip(&admitted)
            .filter_map(|((request, _), a)| a.as_ref().ok().map(|a| (request.clone(), a.granted)))
            .collect();
        let mut answers = self.inner.send_each(&to_send).into_iter();
        admitted
            .iter()
            .map(|a| match a {
                Ok(a) => {
                    let outcome = answers.next().unwrap_or_else(|| {
                        Err(TransportError::Failed {
                            host: String::new(),
                            message: "the transport gave fewer answers than requests".into(),
                        })
                    });
                    self.settle(a, outcome)
                }
                Err(e) => Err(e.clone()),
            })
            .collect()
    }

    fn charge_parsed(&self, values: usize) -> Result<(), TransportError> {
        self.budget.charge_values(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers every request with a body of `size` bytes, honouring `max_body`.
    struct Fixed(usize);

    impl Transport for Fixed {
        fn send(&self, r: &HttpRequest, max_body: usize) -> Result<HttpResponse, TransportError> {
            if self.0 > max_body {
                return Err(TransportError::TooLarge {
                    host: host_of(&r.url),
                    limit: max_body,
                });
            }
            Ok(HttpResponse {
                status: 200,
                headers: vec![],
                body: vec![0; self.0],
            })
        }
    }

    fn get() -> HttpRequest {
        HttpRequest::get("https://r.example/v2/x".into(), vec![])
    }

    /// Requests sent together each hold a slot and a reservation while
    /// they are in flight: past the slots one is refused, and the bytes
    /// are charged as if they had been sent one by one.
    #[test]
    fn requests_sent_together_stay_within_the_slots_and_the_budget() {
        let t = Budgeted::new(Arc::new(Fixed(10)), 1000, 100);
        let batch: Vec<(HttpRequest, usize)> = (0..MAX_FETCHES_IN_FLIGHT + 1)
            .map(|_| (get(), 100))
            .collect();
        let answers = t.send_each(&batch);
        assert_eq!(answers.len(), batch.len());
        assert!(answers[..MAX_FETCHES_IN_FLIGHT].iter().all(Result::is_ok));
        let refused = answers[MAX_FETCHES_IN_FLIGHT].as_ref().unwrap_err();
        assert!(
            refused.to_string().contains("fetches in flight"),
            "{refused}"
        );
        assert_eq!(t.budget.used(), 10 * MAX_FETCHES_IN_FLIGHT);
        // The slots are free again afterwards.
        assert!(t.send(&get(), 100).is_ok());
        // Reservations come out of the budget before anything is sent.
        let small = Budgeted::new(Arc::new(Fixed(10)), 25, 100);
        let answers = small.send_each(&[(get(), 10), (get(), 10), (get(), 10)]);
        assert!(answers[0].is_ok() && answers[1].is_ok());
        assert!(matches!(
            answers[2],
            Err(TransportError::BudgetExceeded { limit: 25 })
        ));
    }

    #[test]
    fn every_body_is_charged_until_the_budget_runs_out() {
        let t = Budgeted::new(Arc::new(Fixed(10)), 35, 100);
        for _ in 0..3 {
            assert!(t.send(&get(), 100).is_ok());
        }
        assert_eq!(t.budget.used(), 30);
        assert_eq!(t.budget.refusals(), 0);
        // 5 bytes left: a 10-byte body is refused, as is everything after.
        let err = t.send(&get(), 100).unwrap_err();
        assert_eq!(err.to_string(), "registry data budget of 35 bytes exceeded");
        assert_eq!(
            t.send(&get(), 100).unwrap_err(),
            TransportError::BudgetExceeded { limit: 35 }
        );
        assert_eq!(t.budget.refusals(), 2);
    }

    #[test]
    fn an_object_over_its_own_limit_is_not_a_budget_refusal() {
        let t = Budgeted::new(Arc::new(Fixed(10)), 1000, 100);
        let err = t.send(&get(), 5).unwrap_err();
        assert!(
            matches!(err, TransportError::TooLarge { limit: 5, .. }),
            "{err}"
        );
        assert_eq!(t.budget.refusals(), 0);
        assert_eq!(
            t.budget.used(),
            0,
            "a refused object's reservation comes back"
        );
    }

    #[test]
    fn parsed_values_are_charged_all_or_nothing() {
        let t = Budgeted::new(Arc::new(Fixed(10)), 1000, 100);
        assert_eq!(t.charge_parsed(60), Ok(()));
        let err = t.charge_parsed(50).unwrap_err();
        assert_eq!(
            err.to_string(),
            "registry data budget of 100 parsed JSON values exceeded"
        );
        assert_eq!(t.charge_parsed(1), Err(err.clone()));
        assert_eq!(t.budget.exceeded_message(), err.to_string());
        assert_eq!(t.budget.refusals(), 2);
    }
}
