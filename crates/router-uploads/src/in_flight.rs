//! Uploads in progress on this instance: the caps on how many run at once
//! (per account and in all), and the files and bytes each account's
//! uploads in progress hold toward its quota before they are admitted.
//!
//! The stored counts come from the database (`store::precheck`); this adds
//! the reservations of the account's other uploads still being read here,
//! so bodies in flight cannot spool past the quota. Each instance bounds
//! only its own uploads: `store::admit` stays the exact, atomic check.

use router_store::uploads::{Held, MAX_BYTES, MAX_OBJECTS};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use uuid::Uuid;

/// The uploads in progress on this instance.
#[derive(Debug, Default)]
pub struct InFlight {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Tickets alive: uploads in progress on this instance.
    total: usize,
    /// Accounts with a ticket alive.
    accounts: HashMap<Uuid, Account>,
}

#[derive(Debug, Default)]
struct Account {
    /// Its tickets alive: the entry lives as long as one does.
    tickets: usize,
    /// Its uploads that passed the per-account cap.
    running: usize,
    /// Files and bytes its uploads reserved and are not yet admitted.
    files: i64,
    bytes: i64,
    /// Its uploads admitted here: a ticket that read the stored counts
    /// before the latest admission must read them again.
    admissions: u64,
}

/// Why an upload may not go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// This many uploads are in progress on this instance already.
    #[error("{0} uploads are in progress on this instance")]
    Total(usize),
    /// This many uploads of the account are in progress already.
    #[error("{0} uploads of this account are in progress")]
    Account(usize),
    /// The files or bytes held, stored and in progress, leave no room.
    #[error("the upload quota cannot hold this upload")]
    Quota,
}

/// What an upload asks to reserve: room for at least `floor` bytes (the
/// smallest file its body could carry), at most `want`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    pub floor: u64,
    pub want: u64,
}

/// One upload in progress; gives back what it holds when dropped, however
/// the request ends (answered, failed, or its connection gone).
#[derive(Debug)]
pub struct Ticket<'a> {
    flight: &'a InFlight,
    account: Uuid,
    /// The account's `admissions` when its stored counts were (to be) read.
    seen: u64,
    /// Counted in the account's `running`.
    running: bool,
    /// The bytes reserved with one file, until admitted.
    reserved: Option<u64>,
}

impl InFlight {
    /// An upload starts: refused when `total` are in progress here already.
    /// Read the account's stored counts after this.
    pub fn enter(&self, account: Uuid, total: usize) -> Result<Ticket<'_>, Refusal> {
        let mut state = self.lock();
        if state.total >= total {
            return Err(Refusal::Total(total));
        }
        state.total += 1;
        let entry = state.accounts.entry(account).or_default();
        entry.tickets += 1;
        let seen = entry.admissions;
        Ok(Ticket {
            flight: self,
            account,
            seen,
            running: false,
            reserved: None,
        })
    }

    /// Uploads in progress here: all, and the account's bytes reserved.
    pub fn usage(&self, account: Uuid) -> (usize, u64) {
        let state = self.lock();
        let bytes = state.accounts.get(&account).map_or(0, |a| a.bytes);
        (state.total, u64::try_from(bytes).unwrap_or(0))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while it is held; a poisoned lock still has whole counts.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn account<'s>(state: &'s mut State, id: &Uuid) -> &'s mut Account {
    state.accounts.entry(*id).or_default()
}

impl Ticket<'_> {
    /// Takes its place among the account's uploads (at most
    /// `per_account`) and, when the body may be admitted (`claim`),
    /// reserves one file and bytes against the room `held` leaves beside
    /// the account's other reservations: `Ok(Some(bytes))`, at most
    /// `claim.want` (nothing when there is no claim). `Ok(None)`: one of
    /// the account's uploads was admitted here since `held` was read, so
    /// it may lack it: read it again and call again.
    pub fn reserve(
        &mut self,
        per_account: usize,
        held: Held,
        claim: Option<Claim>,
    ) -> Result<Option<u64>, Refusal> {
        let mut state = self.flight.lock();
        let entry = account(&mut state, &self.account);
        if !self.running && entry.running >= per_account {
            return Err(Refusal::Account(per_account));
        }
        let mut reserved = 0;
        if let Some(claim) = claim {
            if entry.admissions != self.seen {
                self.seen = entry.admissions;
                return Ok(None);
            }
            let room = MAX_BYTES
                .saturating_sub(held.bytes)
                .saturating_sub(entry.bytes)
                .max(0);
            let room = u64::try_from(room).unwrap_or(0);
            if held.objects.saturating_add(entry.files) >= MAX_OBJECTS || claim.floor.max(1) > room
            {
                return Err(Refusal::Quota);
            }
            reserved = claim.want.min(room);
            entry.files += 1;
            entry.bytes += i64::try_from(reserved).unwrap_or(i64::MAX);
            self.reserved = Some(reserved);
        }
        if !self.running {
            entry.running += 1;
            self.running = true;
        }
        Ok(Some(reserved))
    }

    /// The body is read and its file has `bytes`: a reservation larger than
    /// that shrinks to it, leaving the rest to the account's other uploads.
    pub fn settle(&mut self, bytes: u64) {
        let Some(reserved) = self.reserved else {
            return;
        };
        if bytes >= reserved {
            return;
        }
        let mut state = self.flight.lock();
        let entry = account(&mut state, &self.account);
        entry.bytes -= i64::try_from(reserved - bytes).unwrap_or(0);
        self.reserved = Some(bytes);
    }

    /// Admitted: the database counts the upload from now on, so its
    /// reservation ends (its place among the account's uploads stays
    /// until the request ends).
    pub fn admitted(&mut self) {
        let mut state = self.flight.lock();
        let entry = account(&mut state, &self.account);
        if let Some(bytes) = self.reserved.take() {
            entry.files -= 1;
            entry.bytes -= i64::try_from(bytes).unwrap_or(0);
        }
        entry.admissions += 1;
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        let mut guard = self.flight.lock();
        let state = &mut *guard;
        state.total = state.total.saturating_sub(1);
        let Some(entry) = state.accounts.get_mut(&self.account) else {
            return;
        };
        entry.tickets = entry.tickets.saturating_sub(1);
        if self.running {
            entry.running = entry.running.saturating_sub(1);
        }
        if let Some(bytes) = self.reserved.take() {
            entry.files -= 1;
            entry.bytes -= i64::try_from(bytes).unwrap_or(0);
        }
        if entry.tickets == 0 {
            state.accounts.remove(&self.account);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    fn held(objects: i64, bytes: u64) -> Held {
        Held {
            objects,
            bytes: bytes as i64,
        }
    }

    fn claim(floor: u64, want: u64) -> Option<Claim> {
        Some(Claim { floor, want })
    }

    #[test]
    fn the_total_cap_counts_every_ticket_alive() {
        let flight = InFlight::default();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let first = flight.enter(a, 2).unwrap();
        let _second = flight.enter(b, 2).unwrap();
        assert_eq!(flight.enter(a, 2).unwrap_err(), Refusal::Total(2));
        drop(first);
        assert!(flight.enter(a, 2).is_ok());
    }

    #[test]
    fn the_account_cap_is_exact_and_per_account() {
        let flight = InFlight::default();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let mut running = Vec::new();
        for _ in 0..2 {
            let mut t = flight.enter(a, 64).unwrap();
            assert_eq!(t.reserve(2, held(0, 0), claim(1, MIB)), Ok(Some(MIB)));
            running.push(t);
        }
        let mut third = flight.enter(a, 64).unwrap();
        assert_eq!(
            third.reserve(2, held(0, 0), claim(1, MIB)),
            Err(Refusal::Account(2))
        );
        let mut other = flight.enter(b, 64).unwrap();
        assert_eq!(other.reserve(2, held(0, 0), None), Ok(Some(0)));
        running.pop();
        assert_eq!(third.reserve(2, held(0, 0), claim(1, MIB)), Ok(Some(MIB)));
    }

    #[test]
    fn reservations_count_toward_the_quota_until_admitted_or_dropped() {
        let flight = InFlight::default();
        let a = Uuid::now_v7();
        let stored = held(0, 60 * MIB);
        let mut first = flight.enter(a, 64).unwrap();
        assert_eq!(
            first.reserve(4, stored, claim(3 * MIB, 3 * MIB)),
            Ok(Some(3 * MIB))
        );
        // 1 MiB left: a 2 MiB file cannot fit; one that may is given the rest.
        let mut second = flight.enter(a, 64).unwrap();
        assert_eq!(
            second.reserve(4, stored, claim(2 * MIB, 2 * MIB)),
            Err(Refusal::Quota)
        );
        assert_eq!(second.reserve(4, stored, claim(1, 2 * MIB)), Ok(Some(MIB)));
        assert_eq!(flight.usage(a), (2, 4 * MIB));
        // The first one's file turns out smaller: the rest goes back.
        first.settle(MIB);
        assert_eq!(flight.usage(a), (2, 2 * MIB));
        drop(second);
        assert_eq!(flight.usage(a), (1, MIB));
        drop(first);
        assert_eq!(flight.usage(a), (0, 0));
        assert!(flight.lock().accounts.is_empty());
    }

    #[test]
    fn files_in_progress_count_toward_the_object_quota() {
        let flight = InFlight::default();
        let a = Uuid::now_v7();
        let mut first = flight.enter(a, 64).unwrap();
        assert_eq!(first.reserve(4, held(31, 0), claim(1, 10)), Ok(Some(10)));
        let mut second = flight.enter(a, 64).unwrap();
        assert_eq!(
            second.reserve(4, held(31, 0), claim(1, 10)),
            Err(Refusal::Quota)
        );
        // Without a claim (a body refused by its size) only the cap applies.
        assert_eq!(second.reserve(4, held(31, 0), None), Ok(Some(0)));
    }

    #[test]
    fn an_admission_since_the_counts_were_read_makes_them_read_again() {
        let flight = InFlight::default();
        let a = Uuid::now_v7();
        let mut first = flight.enter(a, 64).unwrap();
        let mut second = flight.enter(a, 64).unwrap();
        assert_eq!(first.reserve(4, held(0, 0), claim(1, MIB)), Ok(Some(MIB)));
        first.admitted();
        assert_eq!(flight.usage(a), (2, 0));
        // `second` read the counts before `first` was admitted.
        assert_eq!(second.reserve(4, held(0, 0), claim(1, MIB)), Ok(None));
        assert_eq!(
            second.reserve(4, held(1, MIB), claim(1, MIB)),
            Ok(Some(MIB))
        );
        drop(first);
        assert_eq!(flight.usage(a), (1, MIB));
    }
}
