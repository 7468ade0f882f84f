//! Group commit: concurrent callers' operations of one kind gathered into
//! one statement.
//!
//! Every reservation and settlement of an account writes its wallet row, and
//! PostgreSQL serialises writers of a row: each holds the row lock until its
//! commit. One statement per request therefore caps one account at about one
//! request per commit time, whatever the hardware. A [`GroupCommit`] runs a
//! batch only while it holds one of the [`BatchSlots`] it was given;
//! whatever arrives while the slots are taken waits for the next free one
//! and then goes in a single batch. An idle router adds no wait (a lone
//! request is a batch of one, sent at once), and a busy one makes batches as
//! large as the load, so the row is written once per batch instead of once
//! per request. Queues whose batches write the same rows share their slots,
//! so that their batches take turns instead of queueing on row locks.
//!
//! Guarantees are those of the batch statement (atomic, exactly once per
//! request); a batch that fails fails every caller in it with the same
//! error, and nothing of it is written.

use std::future::Future;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

type Pending<Item, Out> = (Item, oneshot::Sender<Out>);

/// The slot a running batch holds. Released when the batch ends, or
/// earlier by the batch itself ([`Slot::release`]) when what is left of its
/// work need not keep the other queues waiting.
pub(crate) struct Slot(Option<OwnedSemaphorePermit>);

impl Slot {
    pub(crate) fn release(&mut self) {
        self.0 = None;
    }
}

/// How many batches may run at once, across every queue given these slots.
#[derive(Clone)]
pub(crate) struct BatchSlots(Arc<Semaphore>);

impl BatchSlots {
    pub(crate) fn new(in_flight: usize) -> Self {
        BatchSlots(Arc::new(Semaphore::new(in_flight.max(1))))
    }
}

/// A queue of operations of one kind, run in batches by a background task.
pub(crate) struct GroupCommit<Item, Out> {
    queue: mpsc::UnboundedSender<Pending<Item, Out>>,
}

impl<Item, Out> GroupCommit<Item, Out>
where
    Item: Send + 'static,
    Out: Send + 'static,
{
    /// Starts the batching task. `run` executes one batch, while holding one
    /// of `slots` (given to it: it may release it early), and returns one
    /// output per item, in order. The task ends when the last handle is
    /// dropped.
    pub(crate) fn spawn<Run, Fut>(slots: BatchSlots, max_batch: usize, run: Run) -> Self
    where
        Run: Fn(Vec<Item>, Slot) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<Out>> + Send + 'static,
    {
        let (queue, mut pending) = mpsc::unbounded_channel::<Pending<Item, Out>>();
        let run = Arc::new(run);
        tokio::spawn(async move {
            loop {
                // The first item, then a slot: a queue never holds a shared
                // slot while it has nothing to run. What arrives while it
                // waits for the slot joins the batch.
                let Some(first) = pending.recv().await else {
                    return;
                };
                let Ok(slot) = slots.0.clone().acquire_owned().await else {
                    return;
                };
                let mut batch = vec![first];
                while batch.len() < max_batch {
                    match pending.try_recv() {
                        Ok(next) => batch.push(next),
                        Err(_) => break,
                    }
                }
                let run = run.clone();
                tokio::spawn(async move {
                    let (items, replies): (Vec<Item>, Vec<oneshot::Sender<Out>>) =
                        batch.into_iter().unzip();
                    let outputs = run(items, Slot(Some(slot))).await;
                    debug_assert_eq!(outputs.len(), replies.len());
                    for (reply, output) in replies.into_iter().zip(outputs) {
                        // A caller that left does not stop the others' replies.
                        let _ = reply.send(output);
                    }
                });
            }
        });
        GroupCommit { queue }
    }

    /// Queues `item` and waits for its batch. `None` when the batching task
    /// is gone (its runtime shut down) or the batch returned no output for it.
    /// Once queued, the item runs even if this future is dropped.
    pub(crate) async fn submit(&self, item: Item) -> Option<Out> {
        let (reply, output) = oneshot::channel();
        self.queue.send((item, reply)).ok()?;
        output.await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    #[tokio::test]
    async fn a_lone_item_goes_at_once_and_a_crowd_shares_batches() {
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let recorded = sizes.clone();
        let commits = Arc::new(GroupCommit::spawn(
            BatchSlots::new(1),
            64,
            move |items: Vec<u32>, slot: Slot| {
                recorded.lock().unwrap().push(items.len());
                async move {
                    let _slot = slot;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    items.into_iter().map(|i| i * 10).collect::<Vec<_>>()
                }
            },
        ));
        assert_eq!(commits.submit(1).await, Some(10));

        let callers: Vec<_> = (0..20)
            .map(|i| {
                let commits = commits.clone();
                tokio::spawn(async move { commits.submit(i).await })
            })
            .collect();
        for (i, caller) in callers.into_iter().enumerate() {
            assert_eq!(caller.await.unwrap(), Some(i as u32 * 10));
        }
        let sizes = sizes.lock().unwrap().clone();
        assert_eq!(sizes[0], 1, "a lone item is not held back");
        assert_eq!(sizes.iter().sum::<usize>(), 21);
        assert!(
            sizes.len() <= 3,
            "20 concurrent items should share at most two batches after the first: {sizes:?}"
        );
    }

    #[tokio::test]
    async fn a_departed_caller_does_not_stop_its_item() {
        let ran = Arc::new(Mutex::new(Vec::new()));
        let seen = ran.clone();
        let commits = GroupCommit::spawn(BatchSlots::new(1), 8, move |items: Vec<u32>, _| {
            seen.lock().unwrap().extend(items.iter().copied());
            async move { items }
        });
        let abandoned = commits.submit(7);
        // Polled once (queued), then dropped.
        let _ = tokio::time::timeout(Duration::ZERO, abandoned).await;
        assert_eq!(commits.submit(8).await, Some(8));
        assert_eq!(*ran.lock().unwrap(), vec![7, 8]);
    }

    #[tokio::test]
    async fn an_idle_queue_does_not_hold_a_shared_slot() {
        let slots = BatchSlots::new(1);
        let idle = GroupCommit::spawn(slots.clone(), 8, |items: Vec<u32>, _| async move { items });
        // Let the idle queue's task start and wait for work.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let busy = GroupCommit::spawn(slots, 8, |items: Vec<u32>, _| async move { items });
        for i in 0..3 {
            let out = tokio::time::timeout(Duration::from_secs(2), busy.submit(i)).await;
            assert_eq!(out, Ok(Some(i)), "a queue with work must get the slot");
        }
        drop(idle);
    }

    #[tokio::test]
    async fn queues_sharing_slots_take_turns() {
        let slots = BatchSlots::new(1);
        let running = Arc::new(Mutex::new((0usize, 0usize))); // (now, most at once)
        let queue = |slots: BatchSlots| {
            let running = running.clone();
            Arc::new(GroupCommit::spawn(
                slots,
                4,
                move |items: Vec<u32>, slot: Slot| {
                    let running = running.clone();
                    async move {
                        let _slot = slot;
                        {
                            let mut r = running.lock().unwrap();
                            r.0 += 1;
                            r.1 = r.1.max(r.0);
                        }
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        running.lock().unwrap().0 -= 1;
                        items
                    }
                },
            ))
        };
        let (reserves, settles) = (queue(slots.clone()), queue(slots));
        let callers: Vec<_> = (0..24)
            .map(|i| {
                let q = if i % 2 == 0 { &reserves } else { &settles }.clone();
                tokio::spawn(async move { q.submit(i).await })
            })
            .collect();
        for (i, caller) in callers.into_iter().enumerate() {
            assert_eq!(caller.await.unwrap(), Some(i as u32));
        }
        assert_eq!(
            running.lock().unwrap().1,
            1,
            "one batch at a time across both queues"
        );
    }
}
