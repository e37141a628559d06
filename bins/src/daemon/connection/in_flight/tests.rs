use std::sync::atomic::AtomicUsize;

use tokio::sync::oneshot;

use super::*;

/// A task waker that counts its wake-ups.
#[derive(Default)]
struct Counting(AtomicUsize);

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Counting {
    fn wakes(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A future that counts its polls and ends when `done` is sent.
fn counted(done: oneshot::Receiver<u32>, polls: Arc<AtomicUsize>) -> Pending<u32> {
    Box::pin(async move {
        let mut done = std::pin::pin!(done);
        std::future::poll_fn(|cx| {
            polls.fetch_add(1, Ordering::SeqCst);
            done.as_mut().poll(cx).map(|sent| sent.expect("sent"))
        })
        .await
    })
}

#[test]
fn a_lone_request_still_running_does_not_wake_its_own_task() {
    // FuturesOrdered woke the task here on every poll: a yield that made
    // tokio wake another worker thread on every bridge call.
    let owner = Arc::new(Counting::default());
    let waker = Waker::from(Arc::clone(&owner));
    let mut cx = Context::from_waker(&waker);
    let (_send, receive) = oneshot::channel();
    let mut set = InFlight::default();
    set.push_back(counted(receive, Arc::default()));
    assert!(set.poll_next(&mut cx).is_pending());
    assert!(set.poll_next(&mut cx).is_pending());
    assert_eq!(owner.wakes(), 0);
}

#[test]
fn answers_come_in_the_order_requests_came_and_only_woken_requests_are_polled() {
    let owner = Arc::new(Counting::default());
    let waker = Waker::from(Arc::clone(&owner));
    let mut cx = Context::from_waker(&waker);
    let mut set = InFlight::default();
    let (mut senders, mut polls) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let (send, receive) = oneshot::channel();
        let count = Arc::new(AtomicUsize::new(0));
        set.push_back(counted(receive, Arc::clone(&count)));
        senders.push(Some(send));
        polls.push(count);
    }
    assert!(set.poll_next(&mut cx).is_pending());
    let polls_of =
        |polls: &[Arc<AtomicUsize>]| polls.iter().map(|count| count.load(Ordering::SeqCst)).collect::<Vec<_>>();
    assert_eq!(polls_of(&polls), [1, 1, 1]);

    // The last one ends first: it waits for the first.
    senders[2].take().unwrap().send(30).unwrap();
    assert_eq!(owner.wakes(), 1, "the end of a request wakes the task");
    assert!(set.poll_next(&mut cx).is_pending());
    assert_eq!(polls_of(&polls), [1, 1, 2], "only the woken request is polled");

    senders[0].take().unwrap().send(10).unwrap();
    assert_eq!(set.poll_next(&mut cx), Poll::Ready(Some(10)));
    assert!(set.poll_next(&mut cx).is_pending(), "the second is still running");
    senders[1].take().unwrap().send(20).unwrap();
    assert_eq!(set.poll_next(&mut cx), Poll::Ready(Some(20)));
    assert_eq!(set.poll_next(&mut cx), Poll::Ready(Some(30)));
    assert_eq!(set.poll_next(&mut cx), Poll::Ready(None));
    assert!(set.is_empty());
}

#[tokio::test]
async fn a_request_that_yields_is_polled_again() {
    let mut set: InFlight<&str> = InFlight::default();
    set.push_back(Box::pin(async {
        tokio::task::yield_now().await;
        tokio::task::yield_now().await;
        "done"
    }));
    assert_eq!(set.len(), 1);
    assert_eq!(set.next().await, Some("done"));
}
