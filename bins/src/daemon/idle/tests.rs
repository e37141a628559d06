use super::*;

#[tokio::test(start_paused = true)]
async fn expires_after_the_timeout_without_activity() {
    let activity = Activity::new(Some(Duration::from_secs(60)));
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(30)).await;
    activity.touch();
    activity.expired().await;
    assert_eq!(start.elapsed(), Duration::from_secs(90));
}

#[tokio::test(start_paused = true)]
async fn a_running_call_keeps_the_daemon_up_and_restarts_the_timer_when_it_ends() {
    let activity = Activity::new(Some(Duration::from_secs(60)));
    let start = Instant::now();
    let call = activity.begin_call();
    assert_eq!(activity.exits_in(), None);
    let ends = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(150)).await;
        drop(call);
    });
    activity.expired().await;
    ends.await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(210));
    assert_eq!(activity.calls_in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn with_no_timeout_it_never_expires() {
    let activity = Activity::new(None);
    assert_eq!(activity.exits_in(), None);
    let expired = tokio::time::timeout(Duration::from_secs(365 * 24 * 3600), activity.expired()).await;
    assert!(expired.is_err(), "still up a (virtual) year later");
}
