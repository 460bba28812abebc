//! One writer among the replicas: a `coordination.k8s.io/v1` Lease in
//! ivpol's own namespace. Every replica serves admission; only the holder
//! of the Lease writes policy status and webhook configurations.
//!
//! The holder renews every [`RENEW_EVERY`]; another replica takes the Lease
//! over once it has not been renewed for its `leaseDurationSeconds`
//! ([`LEASE_DURATION`]). Every write goes through the Lease's
//! `resourceVersion`, so two replicas never both win a round. A replica
//! that cannot renew (the API server fails, another won) stops writing at
//! once: leadership is only ever claimed after a successful write.

use ivpol_runtime::metrics::metrics;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::PostParams;
use kube::{Api, Client};
use std::time::Duration;
use tokio::sync::watch;

/// How long a Lease holds without renewal.
pub(crate) const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How often the holder renews it (and the others look at it).
pub(crate) const RENEW_EVERY: Duration = Duration::from_secs(5);

/// Takes part in the election for the Lease `namespace/name` as `identity`
/// for good; the receiver says whether this replica leads now.
pub fn elect(
    client: Client,
    namespace: &str,
    name: &str,
    identity: String,
) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    let api: Api<Lease> = Api::namespaced(client, namespace);
    let name = name.to_string();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(RENEW_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let leads = match round(&api, &name, &identity, Timestamp::now()).await {
                Ok(leads) => leads,
                Err(e) => {
                    tracing::warn!("leader election: {e}");
                    false
                }
            };
            if *tx.borrow() != leads {
                match leads {
                    true => {
                        tracing::info!(identity = %identity, lease = %name, "this replica now leads: it writes policy status and webhooks")
                    }
                    false => {
                        tracing::info!(identity = %identity, lease = %name, "this replica no longer leads")
                    }
                }
                metrics().leader.set(i64::from(leads));
            }
            let _ = tx.send(leads);
        }
    });
    rx
}

/// One round: creates, renews or takes over the Lease; whether this
/// replica holds it afterwards.
async fn round(
    api: &Api<Lease>,
    name: &str,
    identity: &str,
    now: Timestamp,
) -> Result<bool, kube::Error> {
    let Some(mut lease) = api.get_opt(name).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: Some(held(None, identity, now, 0)),
        };
        return won(api.create(&PostParams::default(), &lease).await);
    };
    let spec = lease.spec.clone().unwrap_or_default();
    let ours = spec.holder_identity.as_deref() == Some(identity);
    if !ours && !expired(&spec, now) {
        return Ok(false);
    }
    let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!ours);
    let acquired = match ours {
        true => spec.acquire_time.clone(),
        false => None,
    };
    lease.spec = Some(held(acquired, identity, now, transitions));
    won(api.replace(name, &PostParams::default(), &lease).await)
}

/// The spec of a Lease `identity` holds from `acquired` (now if none).
fn held(
    acquired: Option<MicroTime>,
    identity: &str,
    now: Timestamp,
    transitions: i32,
) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(identity.into()),
        lease_duration_seconds: Some(LEASE_DURATION.as_secs() as i32),
        acquire_time: Some(acquired.unwrap_or(MicroTime(now))),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(transitions),
        ..Default::default()
    }
}

/// Whether the Lease has gone unrenewed for its duration (or was never held).
fn expired(spec: &LeaseSpec, now: Timestamp) -> bool {
    let (Some(renewed), Some(seconds)) = (&spec.renew_time, spec.lease_duration_seconds) else {
        return true;
    };
    let until = renewed
        .0
        .checked_add(SignedDuration::from_secs(i64::from(seconds)));
    until.map_or(true, |until| until < now)
}

/// A write that lost the race (409) is not an error: someone else leads.
fn won(result: Result<Lease, kube::Error>) -> Result<bool, kube::Error> {
    match result {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// This replica's name in the Lease: the pod's name (`POD_NAME`, else the
/// host name) and the process id, so a restarted container is a new holder.
pub fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "ivpol".into());
    format!("{host}-{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: &str, renewed_secs_ago: i64) -> LeaseSpec {
        let now = Timestamp::now();
        held(
            None,
            holder,
            now - SignedDuration::from_secs(renewed_secs_ago),
            0,
        )
    }

    #[test]
    fn a_lease_expires_after_its_duration_without_renewal() {
        let now = Timestamp::now();
        assert!(!expired(&spec("a", 5), now));
        assert!(expired(&spec("a", 16), now));
        assert!(expired(&LeaseSpec::default(), now), "never held");
    }
}
