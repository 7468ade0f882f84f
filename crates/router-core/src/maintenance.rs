//! Core's passes of background work (the process schedules them as leased
//! jobs, `router::jobs`): the hold reaper that frees the money of requests
//! whose process died, and the purges that bound what the routing
//! policies keep.

use crate::gateway::Gateway;
use crate::store::{AffinityStore, ResponseCacheStore, Store, StoreError};
use crate::supplier::Suppliers;
use std::time::SystemTime;

impl<S, P> Gateway<S, P>
where
    S: Store + AffinityStore + ResponseCacheStore,
    P: Suppliers,
{
    /// Releases the holds of requests that died with their process (crash,
    /// kill -9), on any instance: a hold carries an expiry that its live
    /// request extends (I6). How many were released.
    pub async fn reap_expired_holds(&self) -> Result<u64, StoreError> {
        let released = self.store().reap_expired_holds(SystemTime::now()).await?;
        if released > 0 {
            metrics::counter!("router_reaper_released_total").increment(released);
            tracing::info!(released, "reaped expired holds");
        }
        Ok(released)
    }

    /// Deletes prompt-cache route preferences that expired a day ago or more.
    pub async fn purge_affinity(&self) -> Result<u64, StoreError> {
        self.store().purge_affinity().await
    }

    /// Deletes exact-response cache entries older than any key's TTL.
    pub async fn purge_response_cache(&self) -> Result<u64, StoreError> {
        self.store().purge_response_cache().await
    }
}
