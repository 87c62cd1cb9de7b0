//! `SharedSemaphore::attach` (open without knowing the total, never create)
//! and `list()`: what the `volt-sem` command line inspects with.
#![cfg(target_os = "linux")]

mod support;

use std::path::Path;

use support::Name;
use volt_sem_shm::{list, Error, OpenOptions, SharedSemaphore};

#[test]
fn attach_reads_the_total_and_shares_the_permits() {
    let name = Name::new("attach");
    let owner = SharedSemaphore::open(&name, 7, OpenOptions::new()).unwrap();
    let _held = owner.try_acquire(3).unwrap();
    // Another process's view is what matters; within one process `attach`
    // shares the record, so check the total and the counter only.
    let seen = SharedSemaphore::attach(&name, OpenOptions::new()).unwrap();
    assert_eq!(seen.total_permits(), 7);
    assert_eq!(seen.available_permits(), 4);
    let i = seen.inspect().unwrap();
    assert_eq!((i.total, i.available, i.held()), (7, 4, 3));
}

#[test]
fn attach_never_creates() {
    let name = Name::new("absent");
    assert_eq!(
        SharedSemaphore::attach(&name, OpenOptions::new()).unwrap_err(),
        Error::NotFound
    );
    assert!(!Path::new(&name.path()).exists());
    assert!(!list().unwrap().contains(&name.0));
    assert_eq!(
        SharedSemaphore::attach("a/b", OpenOptions::new()).unwrap_err(),
        Error::InvalidName
    );
}

#[test]
fn attach_to_a_name_whose_creator_died_before_sizing_it_is_not_found() {
    let name = Name::new("unsized");
    // What a creator killed between `shm_open` and sizing the file leaves.
    std::fs::File::create(name.path()).unwrap();
    assert_eq!(
        SharedSemaphore::attach(&name, OpenOptions::new()).unwrap_err(),
        Error::NotFound
    );
    // Left as it was: the next `open` with a total initialises it.
    assert_eq!(std::fs::metadata(name.path()).unwrap().len(), 0);
    let sem = SharedSemaphore::open(&name, 2, OpenOptions::new().attach_only()).unwrap();
    assert_eq!(sem.total_permits(), 2);
}

#[test]
fn attach_refuses_a_foreign_file() {
    let name = Name::new("foreign");
    std::fs::write(name.path(), vec![0x5a; 4096]).unwrap();
    assert_eq!(
        SharedSemaphore::attach(&name, OpenOptions::new()).unwrap_err(),
        Error::NotASegment
    );
}

#[test]
fn list_shows_the_names_and_forgets_unlinked_ones() {
    let a = Name::new("list-a");
    let b = Name::new("list-b");
    let _sa = SharedSemaphore::open(&a, 1, OpenOptions::new()).unwrap();
    let _sb = SharedSemaphore::open(&b, 2, OpenOptions::new()).unwrap();
    let names = list().unwrap();
    assert!(names.contains(&a.0) && names.contains(&b.0), "{names:?}");
    assert!(names.windows(2).all(|w| w[0] <= w[1]), "sorted: {names:?}");
    volt_sem_shm::unlink(&a).unwrap();
    let names = list().unwrap();
    assert!(!names.contains(&a.0) && names.contains(&b.0), "{names:?}");
}

/// `is_unlinked`: false while the name is this semaphore's, true once it was
/// removed, and still true when another semaphore took the name since.
#[test]
fn is_unlinked_follows_the_name() {
    let name = Name::new("unlinked");
    let sem = SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap();
    let seen = SharedSemaphore::attach(&name, OpenOptions::new()).unwrap();
    assert_eq!(seen.is_unlinked(), Ok(false));
    volt_sem_shm::unlink(&name).unwrap();
    assert_eq!(seen.is_unlinked(), Ok(true));
    assert_eq!(sem.is_unlinked(), Ok(true));
    let other = SharedSemaphore::open(&name, 3, OpenOptions::new().create_only()).unwrap();
    assert_eq!(other.is_unlinked(), Ok(false));
    assert_eq!(seen.is_unlinked(), Ok(true));
}

/// Two names of one segment (a hard link in /dev/shm), opened at the same
/// time by two threads of one process: the process must get one record, as
/// for two opens of one name (so that permits acquired through one handle
/// can be released through the other, and `inspect` lists the process once).
/// The first `open` is paused (a test hook) after it attached and released
/// the init lock, just before it returns; the second runs to its end meanwhile.
#[test]
fn two_hard_linked_names_opened_at_once_share_one_record() {
    use std::time::Duration;
    use volt_sem_shm::hooks;

    let a = Name::new("link-a");
    let b = Name::new("link-b");
    // The segment exists, nobody attached: both opens below attach.
    drop(SharedSemaphore::open(&a, 3, OpenOptions::new()).unwrap());
    std::fs::hard_link(a.path(), b.path()).unwrap();

    hooks::pause_next_open_of(&a);
    let first = {
        let a = a.0.clone();
        std::thread::spawn(move || {
            SharedSemaphore::open(&a, 3, OpenOptions::new().label("via-a")).unwrap()
        })
    };
    let paused = hooks::wait_open_paused(Duration::from_secs(10));
    if !paused {
        hooks::resume_open();
        panic!("the open of the first name never reached the pause");
    }
    let via_b = SharedSemaphore::open(&b, 3, OpenOptions::new().label("via-b"));
    hooks::resume_open();
    let via_a = first.join().unwrap();
    let via_b = via_b.unwrap();

    assert_eq!(
        via_a.process_record(),
        via_b.process_record(),
        "one process, one segment, two records"
    );
    assert_eq!(via_b.label(), via_a.label(), "the first label wins");
    // One record: permits taken through one name go back through the other.
    via_a.try_acquire(2).unwrap().forget();
    let i = via_b.inspect().unwrap();
    assert_eq!(i.holders.len(), 1, "{:?}", i.holders);
    assert_eq!(i.available + i.held() + i.granted_to_waiters(), i.total);
    assert_eq!(via_b.held_permits(), Ok(2));
    via_b.release(2).unwrap();
    let c = support::assert_conserved(&via_a);
    assert_eq!((c.live, c.available, c.held), (1, 3, 0));
}
