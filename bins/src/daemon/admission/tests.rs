use super::*;

#[test]
fn a_full_unproven_pool_closes_its_oldest_connection_first() {
    let admission = Admission::new();
    let mut arrivals: Vec<Arrival> = (0..MAX_UNPROVEN).map(|_| admission.arrive()).collect();
    assert_eq!(admission.unproven(), MAX_UNPROVEN);
    let newest = admission.arrive();
    assert_eq!(admission.unproven(), MAX_UNPROVEN, "the pool never grows past its size");
    assert!(arrivals[0].evicted.try_recv().is_ok(), "the oldest was told to close");
    assert!(arrivals[1].evicted.try_recv().is_err(), "the next one was not");
    drop(newest);
    assert_eq!(admission.unproven(), MAX_UNPROVEN - 1);
}

#[test]
fn a_proven_connection_leaves_the_pool_and_takes_a_slot_until_none_is_left() {
    let admission = Admission::new();
    let mut permits = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        permits.push(admission.arrive().prove().expect("a free slot"));
    }
    assert_eq!(admission.unproven(), 0);
    assert!(admission.arrive().prove().is_err(), "slot {} is refused", MAX_CONNECTIONS + 1);
    permits.pop();
    assert!(admission.arrive().prove().is_ok(), "a freed slot is taken again");
}
