//! Bounds on what one server may ask of a person.
//!
//! A server that asks in a loop must not bury the person (or the daemon's
//! queue) in questions. Three limits, each a named constant:
//!
//! - one question of each kind at a time per call: a tool asks, waits for
//!   the answer, asks again — never two at once;
//! - a few at a time per server outside any call Warden can name (on stdio
//!   with several calls in flight a request cannot be tied to one);
//! - a rate per server, counted over a sliding minute.
//!
//! A request over a limit is refused at once with an error naming it; the
//! permit a request holds frees its place when the answer is sent (or the
//! request is abandoned).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// At most this many questions of one kind wait at once for a server's
/// requests that belong to no call Warden can name.
const MAX_UNTIED_AT_ONCE: usize = 4;

/// At most this many requests per server per [`RATE_WINDOW`]: far more than
/// a person answers, far fewer than a loop sends.
const MAX_PER_WINDOW: usize = 30;

/// The window of [`MAX_PER_WINDOW`].
const RATE_WINDOW: Duration = Duration::from_secs(60);

/// The kinds of request limited separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Elicitation,
    Sampling,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Elicitation => "elicitation",
            Kind::Sampling => "sampling",
        }
    }
}

/// Outstanding requests and recent arrivals, per server.
#[derive(Default)]
pub(crate) struct Throttle {
    shared: Arc<Mutex<Counts>>,
}

#[derive(Default)]
struct Counts {
    /// (server, call ticket or 0, kind) → requests waiting.
    outstanding: HashMap<(String, u64, Kind), usize>,
    /// server → when its recent requests arrived, oldest first.
    arrivals: HashMap<String, VecDeque<Instant>>,
}

/// A place held by one request until it is answered.
pub(crate) struct Permit {
    shared: Arc<Mutex<Counts>>,
    key: (String, u64, Kind),
}

impl Throttle {
    /// A place for one request of `kind` from `server` during the call
    /// `ticket` (`None`: no call), or the limit it is over, in words.
    pub(crate) fn admit(&self, server: &str, ticket: Option<u64>, kind: Kind) -> Result<Permit, String> {
        let mut counts = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let arrivals = counts.arrivals.entry(server.to_string()).or_default();
        while arrivals.front().is_some_and(|at| now.duration_since(*at) > RATE_WINDOW) {
            arrivals.pop_front();
        }
        if arrivals.len() >= MAX_PER_WINDOW {
            return Err(format!(
                "server '{server}' sent more than {MAX_PER_WINDOW} requests for a person in {} s; Warden refuses more until the rate falls",
                RATE_WINDOW.as_secs()
            ));
        }
        let key = (server.to_string(), ticket.unwrap_or(0), kind);
        let waiting = counts.outstanding.get(&key).copied().unwrap_or(0);
        let (limit, scope) = match ticket {
            Some(_) => (1, "per tool call"),
            None => (MAX_UNTIED_AT_ONCE, "outside a tool call"),
        };
        if waiting >= limit {
            return Err(format!(
                "server '{server}' already has {waiting} {} request(s) waiting for an answer; Warden allows {limit} at a time {scope}",
                kind.noun()
            ));
        }
        counts.arrivals.entry(server.to_string()).or_default().push_back(now);
        *counts.outstanding.entry(key.clone()).or_default() += 1;
        Ok(Permit { shared: self.shared.clone(), key })
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut counts = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(waiting) = counts.outstanding.get_mut(&self.key) {
            *waiting -= 1;
            if *waiting == 0 {
                counts.outstanding.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_question_at_a_time_per_call_and_a_few_outside_calls() {
        let throttle = Throttle::default();
        let first = throttle.admit("s", Some(7), Kind::Elicitation).unwrap();
        let error = throttle.admit("s", Some(7), Kind::Elicitation).err().unwrap();
        assert_eq!(error, "server 's' already has 1 elicitation request(s) waiting for an answer; Warden allows 1 at a time per tool call");
        assert!(throttle.admit("s", Some(8), Kind::Elicitation).is_ok(), "another call may ask");
        drop(first);
        assert!(throttle.admit("s", Some(7), Kind::Elicitation).is_ok(), "answered: the call may ask again");
        let untied: Vec<Permit> = (0..4).map(|_| throttle.admit("t", None, Kind::Elicitation).unwrap()).collect();
        assert!(throttle.admit("t", None, Kind::Elicitation).is_err());
        drop(untied);
    }

    #[test]
    fn a_server_asking_in_a_loop_is_refused_past_the_rate() {
        let throttle = Throttle::default();
        for _ in 0..MAX_PER_WINDOW {
            drop(throttle.admit("loop", Some(1), Kind::Elicitation).unwrap());
        }
        let error = throttle.admit("loop", Some(1), Kind::Elicitation).err().unwrap();
        assert!(error.starts_with("server 'loop' sent more than 30 requests for a person in 60 s"), "{error}");
        assert!(throttle.admit("other", Some(1), Kind::Elicitation).is_ok(), "per server");
    }
}
