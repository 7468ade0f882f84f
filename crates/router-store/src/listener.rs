//! The one dedicated connection per process that LISTENs for the changes
//! other instances announce, and hands each notification to the in-process
//! cache that listens on its channel: the API-key cache, the response-cache
//! front and the experiment front.
//!
//! While the connection is up every subscriber serves from its cache; when
//! it is lost each is turned off (emptied and bypassed) until a new
//! connection listens again, because a change announced meanwhile would be
//! missed. A heartbeat notices a connection that died silently.

use crate::error::store_error;
use diesel::IntoSql;
use diesel::sql_types::Integer;
use diesel_async::{AsyncConnection, AsyncPgConnection};
use futures::StreamExt;
use router_core::store::StoreError;
use std::sync::Arc;
use std::time::Duration;

/// How often the listening connection proves it is alive when no
/// notification arrives; a dead one is noticed within about this long.
const HEARTBEAT: Duration = Duration::from_secs(5);
/// The listening connection's `application_name`, so an operator (or a
/// test) can find it in `pg_stat_activity`.
pub const APPLICATION_NAME: &str = "router-listener";

/// A cache kept honest by one NOTIFY channel.
pub trait Subscriber: Send + Sync {
    fn channel(&self) -> &'static str;
    /// A change was announced on the channel.
    fn notified(&self, payload: &str);
    /// The channel is heard (true) or not (false): serve, or empty and bypass.
    fn set_listening(&self, listening: bool);
}

/// Opens the LISTEN connection, turns the subscribers on, and keeps them
/// listening in a background task (reconnecting, with them off, when the
/// connection is lost). Fails when the first connection cannot be made.
pub async fn start(url: Arc<str>, subscribers: Vec<Arc<dyn Subscriber>>) -> Result<(), StoreError> {
    let conn = listen(&url, &subscribers).await?;
    set_listening(&subscribers, true);
    tokio::spawn(async move {
        let mut conn = conn;
        // Logged as "change listener lost" (in-process caches are off
        // until it is back), then rate-limited while the database is away.
        let mut reconnect = crate::backoff::Reconnect::new("change listener");
        loop {
            let error = relay(&mut conn, &subscribers).await;
            set_listening(&subscribers, false);
            let mut pause = reconnect.failed(&error);
            conn = loop {
                tokio::time::sleep(pause).await;
                match listen(&url, &subscribers).await {
                    Ok(conn) => break conn,
                    Err(error) => pause = reconnect.failed(&error),
                }
            };
            set_listening(&subscribers, true);
            reconnect.connected();
        }
    });
    Ok(())
}

fn set_listening(subscribers: &[Arc<dyn Subscriber>], listening: bool) {
    for subscriber in subscribers {
        subscriber.set_listening(listening);
    }
}

async fn listen(
    url: &str,
    subscribers: &[Arc<dyn Subscriber>],
) -> Result<AsyncPgConnection, StoreError> {
    use diesel_async::SimpleAsyncConnection;
    let mut conn = AsyncPgConnection::establish(url)
        .await
        .map_err(|error| StoreError::Unavailable(error.to_string()))?;
    let mut statements = format!("SET application_name = '{APPLICATION_NAME}';");
    for subscriber in subscribers {
        statements.push_str(&format!("LISTEN {};", subscriber.channel()));
    }
    conn.batch_execute(&statements).await.map_err(store_error)?;
    Ok(conn)
}

/// Hands notifications to their subscribers until the connection fails;
/// returns why it did.
async fn relay(conn: &mut AsyncPgConnection, subscribers: &[Arc<dyn Subscriber>]) -> StoreError {
    use diesel_async::RunQueryDsl;
    loop {
        let next = {
            let mut notifications = std::pin::pin!(conn.notifications_stream());
            tokio::time::timeout(HEARTBEAT, notifications.next()).await
        };
        match next {
            Ok(Some(Ok(notification))) => {
                for subscriber in subscribers {
                    if subscriber.channel() == notification.channel {
                        subscriber.notified(&notification.payload);
                    }
                }
            }
            Ok(Some(Err(error))) => return store_error(error),
            Ok(None) => return StoreError::Unavailable("notification stream ended".into()),
            Err(_quiet) => {
                if let Err(error) = diesel::select(1_i32.into_sql::<Integer>())
                    .get_result::<i32>(conn)
                    .await
                {
                    return store_error(error);
                }
            }
        }
    }
}
