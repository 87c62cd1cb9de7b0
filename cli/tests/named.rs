//! `volt-sem` on named semaphores held and awaited by real processes:
//! `inspect` (table and JSON), a `kill -9` of the holder, `ls`, `watch`,
//! `unlink`, and that looking never creates a name.
#![cfg(target_os = "linux")]

mod support;

use std::path::Path;
use std::time::Duration;

use support::*;

/// Not a test of its own: the body of the child processes.
#[test]
fn child_main() {
    support::child_main();
}

fn inspect_json(name: &str) -> serde_json::Value {
    json(&["inspect", name, "--json"])
}

#[test]
fn inspect_shows_other_processes_and_a_kill9_gives_the_permits_back() {
    let name = Name::new("inspect");
    let mut holder = Holder::spawn("hold", &name.0, 4, 3, "holder-a");
    let waiter = Holder::spawn("wait", &name.0, 4, 2, "waiter-b");
    // The waiter queues after it reported: wait for the queue to show it.
    eventually("the waiter queued", Duration::from_secs(30), || {
        inspect_json(name.s())["waiters"].as_array().unwrap().len() == 1
    });

    let table = ok(&["inspect", name.s()]);
    assert!(
        table.contains("holder-a") && table.contains("waiter-b"),
        "{table}"
    );
    assert!(table.contains(&holder.pid().to_string()), "{table}");
    assert!(table.contains("(named, this machine)"), "{table}");

    let v = inspect_json(name.s());
    assert_eq!(v["total"], 4);
    assert_eq!(v["available"], 0);
    assert_eq!(v["closed"], false);
    let h = &v["holders"][0];
    assert_eq!(v["holders"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(h["label"], "holder-a");
    assert_eq!(h["pid"], holder.pid());
    assert_eq!(h["host"], volt_sem::inspect::hostname());
    assert_eq!(h["permits"], 3);
    assert!(h["held_for"].as_f64().unwrap() >= 0.0, "{h}");
    assert!(
        h["lease_remaining"].is_null() && h["token"].is_null(),
        "{h}"
    );
    let w = &v["waiters"][0];
    assert_eq!(w["label"], "waiter-b");
    assert_eq!(w["pid"], waiter.pid());
    assert_eq!(
        (w["permits"].as_u64(), w["granted"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(w["position"], 0);
    assert!(w["waiting_for"].as_f64().unwrap() >= 0.0, "{w}");

    // kill -9 of the holder: `inspect` reclaims it first, so its 3 permits
    // are back (2 completing the waiter's request, 1 available).
    holder.kill9();
    let v = inspect_json(name.s());
    assert_eq!(v["available"], 2, "{v}");
    assert_eq!(v["waiters"].as_array().unwrap().len(), 0, "{v}");
    let holders = v["holders"].as_array().unwrap();
    assert_eq!(holders.len(), 1, "{v}");
    assert_eq!(
        (holders[0]["label"].as_str(), holders[0]["permits"].as_u64()),
        (Some("waiter-b"), Some(2))
    );
}

#[test]
fn ls_lists_the_name_with_its_counts() {
    let name = Name::new("ls");
    let _holder = Holder::spawn("hold", &name.0, 5, 2, "ls-holder");
    let text = ok(&["ls"]);
    let row = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&name.0))
        .unwrap_or_else(|| panic!("{name} not in\n{text}", name = name.0));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[1..5], ["5", "3", "1", "0"], "{row}");
    assert!(text.starts_with("NAME"), "{text}");

    let list = json(&["ls", "--json"]);
    let me = list
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name.0.as_str())
        .unwrap();
    assert_eq!(
        (me["total"].as_u64(), me["available"].as_u64()),
        (Some(5), Some(3))
    );
    assert_eq!(
        (me["holders"].as_u64(), me["waiters"].as_u64()),
        (Some(1), Some(0))
    );
}

#[test]
fn watch_redraws_count_times() {
    let name = Name::new("watch");
    let _holder = Holder::spawn("hold", &name.0, 2, 1, "watched");
    let text = ok(&["watch", name.s(), "--count", "2", "--interval", "0.1"]);
    assert_eq!(text.matches("grants/s").count(), 2, "{text}");
    assert!(
        text.contains("refresh 1") && text.contains("refresh 2"),
        "{text}"
    );
    assert_eq!(text.matches("watched").count(), 2, "{text}");

    let lines = ok(&[
        "watch",
        name.s(),
        "--count",
        "3",
        "--interval",
        "0.1",
        "--json",
    ]);
    let frames: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(frames.len(), 3, "{lines}");
    assert!(frames[0]["grants_per_second"].is_null());
    // Nobody acquired between the frames: the same holder, no grant seen.
    assert_eq!(frames[1]["grants_per_second"], 0.0);
    assert_eq!(frames[2]["holders"][0]["label"], "watched");
}

#[test]
fn unlink_removes_the_name() {
    let name = Name::new("unlink");
    drop(
        volt_sem_shm::SharedSemaphore::open(name.s(), 1, volt_sem_shm::OpenOptions::new()).unwrap(),
    );
    assert!(Path::new(&name.path()).exists());
    assert_eq!(ok(&["unlink", name.s()]), "");
    assert!(!Path::new(&name.path()).exists());
    let (code, err) = fails(&["unlink", name.s()]);
    assert_eq!(code, 1);
    assert_eq!(err, format!("volt-sem: no such semaphore: {}", name.0));
}

#[test]
fn looking_at_an_unknown_name_fails_and_creates_nothing() {
    let name = Name::new("absent");
    for cmd in [
        &["inspect", name.s()][..],
        &["watch", name.s(), "--count", "1"],
    ] {
        let (code, err) = fails(cmd);
        assert_eq!(code, 1);
        assert_eq!(err, format!("volt-sem: no such semaphore: {}", name.0));
    }
    assert!(!Path::new(&name.path()).exists());
    let (code, err) = fails(&["inspect", "a/b"]);
    assert_eq!(code, 1);
    assert!(err.contains("a/b"), "{err}");
}

#[test]
fn watch_ends_cleanly_on_ctrl_c() {
    let name = Name::new("sigint");
    let _holder = Holder::spawn("hold", &name.0, 2, 1, "watched");
    let (mut watch, mut lines) = watch_json(&[name.s(), "--interval", "0.1"]);
    // A first frame: it is attached and looping.
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("watched"), "{first}");
    // SAFETY: plain syscall on our child's pid.
    unsafe { libc::kill(watch.id() as i32, libc::SIGINT) };
    // Bounded: without the handler it would die of SIGINT (no exit code);
    // with it, it ends its loop within an interval and exits 0.
    let status = watch.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
}

/// `resize` grows a named semaphore online (a queued request of another
/// process is served at once) and shrinks it; `reopen` undoes `close`.
#[test]
fn resize_and_reopen_change_a_named_semaphore() {
    let name = Name::new("resize");
    let _holder = Holder::spawn("hold", &name.0, 2, 2, "holder-r");
    let _waiter = Holder::spawn("wait", &name.0, 2, 2, "waiter-r");
    eventually("the waiter queued", Duration::from_secs(30), || {
        inspect_json(name.s())["waiters"].as_array().unwrap().len() == 1
    });
    assert_eq!(
        ok(&["resize", name.s(), "4"]),
        format!("{}: total 2 -> 4\n", name.0)
    );
    eventually("the waiter was served", Duration::from_secs(30), || {
        let v = inspect_json(name.s());
        v["waiters"].as_array().unwrap().is_empty() && v["holders"].as_array().unwrap().len() == 2
    });
    let v = inspect_json(name.s());
    assert_eq!(
        (v["total"].as_u64(), v["available"].as_u64()),
        (Some(4), Some(0))
    );
    // Shrinking revokes nothing: both keep their permits.
    assert_eq!(
        ok(&["resize", name.s(), "3"]),
        format!("{}: total 4 -> 3\n", name.0)
    );
    let v = inspect_json(name.s());
    assert_eq!(v["total"], 3);
    assert_eq!(v["holders"].as_array().unwrap().len(), 2, "{v}");

    let sem =
        volt_sem_shm::SharedSemaphore::attach(name.s(), volt_sem_shm::OpenOptions::new()).unwrap();
    sem.close().unwrap();
    assert_eq!(inspect_json(name.s())["closed"], true);
    assert_eq!(ok(&["reopen", name.s()]), format!("{}: reopened\n", name.0));
    assert_eq!(inspect_json(name.s())["closed"], false);

    let (code, err) = fails(&["resize", name.s(), "0"]);
    assert_eq!(code, 2, "{err}");
    let absent = Name::new("resize-absent");
    let (code, err) = fails(&["resize", absent.s(), "3"]);
    assert_eq!(
        (code, err),
        (1, format!("volt-sem: no such semaphore: {}", absent.0))
    );
    assert!(!Path::new(&absent.path()).exists());
}

/// Whoever can write /dev/shm can name a semaphore with a newline and a
/// terminal escape sequence in it: the text output must show it escaped,
/// never write the raw control characters to the terminal (they would
/// recolour, move or clear it, and split a table row in two).
#[test]
fn control_characters_in_a_name_are_shown_escaped() {
    let name = Name(format!(
        "cli{}-esc\n\x1b[2J\x1b[31mred\x07",
        std::process::id()
    ));
    let _sem =
        volt_sem_shm::SharedSemaphore::open(name.s(), 3, volt_sem_shm::OpenOptions::new()).unwrap();
    let raw = |s: &str| s.chars().any(|c| c.is_control() && c != '\n');
    let escaped = format!(
        "cli{}-esc\\n\\u{{1b}}[2J\\u{{1b}}[31mred\\u{{7}}",
        std::process::id()
    );

    let text = ok(&["ls"]);
    assert!(!raw(&text), "{text:?}");
    let row = text
        .lines()
        .find(|l| l.starts_with(&escaped))
        .unwrap_or_else(|| panic!("no row for {escaped} in {text:?}"));
    assert_eq!(
        &row.split_whitespace().collect::<Vec<_>>()[1..],
        ["3", "3", "0", "0"]
    );

    let text = ok(&["inspect", name.s()]);
    assert!(!raw(&text), "{text:?}");
    assert!(
        text.starts_with(&format!("{escaped} (named, this machine)\n")),
        "{text:?}"
    );

    // The JSON keeps the name as it is (JSON escapes it itself).
    let list = json(&["ls", "--json"]);
    assert!(list
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["name"] == name.s()));

    // The one line of an error too.
    let absent = format!("{}-absent", name.0);
    let (code, err) = fails(&["inspect", &absent]);
    assert_eq!(code, 1);
    assert!(!raw(&err), "{err:?}");
    assert_eq!(
        err,
        format!("volt-sem: no such semaphore: {escaped}-absent")
    );
}

/// `unlink` while `watch` looks at a named semaphore: the name is gone (the
/// next `open` makes another semaphore), so the watch must not go on showing
/// the orphan as if it were the semaphore of that name. It ends with the
/// error a Redis watch gives for a deleted semaphore.
#[test]
fn watch_ends_when_the_name_is_unlinked() {
    let name = Name::new("watch-unlinked");
    let _holder = Holder::spawn("hold", &name.0, 2, 1, "watched");
    let (watch, mut lines) = watch_json(&[name.s(), "--interval", "0.05", "--count", "100"]);
    // A first frame: it is attached and looping.
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("watched"), "{first}");
    assert_eq!(ok(&["unlink", name.s()]), "");
    let frames = lines.count();
    let out = watch.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{frames} more frames; {err}");
    assert_eq!(
        err,
        format!(
            "volt-sem: {}: unlinked while watched (no such semaphore now)\n",
            name.0
        )
    );
    assert!(frames < 99, "{frames}");
}

/// After a shrink below what is held, the holders keep their permits (the
/// cut is taken as they come back): `inspect` then shows more held than the
/// total, and must say why rather than print "total 2 ... held 3" as if the
/// limit were broken.
#[test]
fn a_pending_shrink_is_explained() {
    let name = Name::new("shrunk");
    let _holder = Holder::spawn("hold", &name.0, 4, 3, "holder-s");
    ok(&["resize", name.s(), "2"]);
    let v = inspect_json(name.s());
    assert_eq!(
        (v["total"].as_u64(), v["available"].as_u64()),
        (Some(2), Some(0)),
        "{v}"
    );
    assert_eq!(v["holders"][0]["permits"], 3, "{v}");
    let table = ok(&["inspect", name.s()]);
    let summary = table.lines().nth(1).unwrap();
    assert_eq!(
        summary,
        "total 2  available 0  held 3  granted to waiters 0  \
         (1 held above the total: taken back as released)",
        "{table}"
    );
}

/// `resize` to MAX_PERMITS works (and JSON carries the number exactly);
/// one more is refused with the limit spelled out, not the name of a
/// constant the user cannot look up from the shell.
#[test]
fn resize_beyond_max_permits_says_the_limit() {
    let name = Name::new("max");
    let _sem =
        volt_sem_shm::SharedSemaphore::open(name.s(), 1, volt_sem_shm::OpenOptions::new()).unwrap();
    let max = volt_sem_shm::MAX_PERMITS.to_string();
    ok(&["resize", name.s(), &max]);
    let v = inspect_json(name.s());
    assert_eq!(v["total"].as_u64(), Some(volt_sem_shm::MAX_PERMITS as u64));
    assert_eq!(
        v["available"].as_u64(),
        Some(volt_sem_shm::MAX_PERMITS as u64)
    );
    let above = (volt_sem_shm::MAX_PERMITS + 1).to_string();
    let (code, err) = fails(&["resize", name.s(), &above]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        format!(
            "volt-sem: {}: permits must be between 1 and {max} (MAX_PERMITS)",
            name.0
        )
    );
}

/// A name whose creator died before sizing its segment (an empty file, the
/// next `open` with a total initialises it) is listed by `ls` with an error
/// that says so, not "no shared semaphore has this name" next to the name
/// it just listed.
#[test]
fn ls_says_a_name_is_not_initialised() {
    let name = Name::new("unsized");
    std::fs::File::create(name.path()).unwrap();
    let text = ok(&["ls"]);
    let row = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&name.0))
        .unwrap_or_else(|| panic!("{} not in\n{text}", name.0));
    assert!(row.contains("not initialised"), "{row}");
    let list = json(&["ls", "--json"]);
    let me = list
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name.s())
        .unwrap();
    assert!(
        me["error"].as_str().unwrap().starts_with("not initialised"),
        "{me}"
    );
}

/// A holder of 1 of 2 permits ("stopper") that stops itself (SIGSTOP)
/// inside the segment's lock of its next release, once the returned file
/// is written: the lock stays held for as long as it stays stopped.
fn stopper(name: &Name) -> (Holder, std::path::PathBuf) {
    let go = std::env::temp_dir().join(format!("{}.go", name.0));
    let holder = Holder::spawn_with(
        "stop-in-release",
        &name.0,
        2,
        1,
        "stopper",
        &[("VOLT_CLI_GO", go.to_str().unwrap())],
    );
    (holder, go)
}

/// Ctrl-C ends a `watch` whose refresh waits for the segment's lock, held
/// by a process stopped inside it (SIGSTOP, a debugger): at once and with
/// exit code 0, as between two refreshes. Before, the handler that makes
/// Ctrl-C end the loop cleanly also made it do nothing while a refresh
/// waited: the watch could only be killed with SIGKILL.
#[test]
fn ctrl_c_ends_a_watch_waiting_for_a_stopped_lock_holder() {
    let name = Name::new("stuck-lock");
    let (mut holder, go) = stopper(&name);
    let (mut watch, mut frames) = watch_json(&[name.s(), "--interval", "0.05"]);
    assert!(frames.next().unwrap().unwrap().contains("stopper"));
    std::fs::write(&go, "").unwrap();
    eventually(
        "the holder stopped inside the lock",
        Duration::from_secs(30),
        || holder.stopped(),
    );
    // The next refresh waits for the lock: wait until a thread of the watch
    // sleeps in futex(2) on a word of the segment's mapping (the lock).
    let reader = std::thread::spawn(move || frames.count());
    let pid = watch.id();
    eventually(
        "a refresh waits for the lock",
        Duration::from_secs(30),
        || waits_in_segment(pid, &name.0),
    );
    // SAFETY: plain syscall on our child's pid.
    unsafe { libc::kill(watch.id() as i32, libc::SIGINT) };
    let ended = exits_within(&mut watch, Duration::from_secs(30));
    let still_stopped = holder.stopped();
    holder.kill9(); // unblocks a stuck watch
    let status = match ended {
        Some(st) => st,
        None => watch.wait().unwrap(),
    };
    let _ = reader.join();
    let _ = std::fs::remove_file(&go);
    assert!(
        ended.is_some(),
        "Ctrl-C did not end the watch ({status:?} once the holder was killed)"
    );
    assert!(still_stopped);
    assert_eq!(status.code(), Some(0), "{status:?}");
}

/// Whether a thread of process `pid` sleeps in futex(2) on an address of its
/// mapping of the named semaphore `name` (its lock, or a word of it).
fn waits_in_segment(pid: u32, name: &str) -> bool {
    let file = format!("/dev/shm/{}{name}", volt_sem_shm::NAME_PREFIX);
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let Some((lo, hi)) = maps.lines().find(|l| l.ends_with(&file)).and_then(|l| {
        let (lo, hi) = l.split(' ').next()?.split_once('-')?;
        Some((
            u64::from_str_radix(lo, 16).ok()?,
            u64::from_str_radix(hi, 16).ok()?,
        ))
    }) else {
        return false;
    };
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|t| {
        let s = std::fs::read_to_string(t.path().join("syscall")).unwrap_or_default();
        let mut f = s.split(' ');
        let nr: i64 = f.next().unwrap_or("").parse().unwrap_or(-1);
        let addr = f
            .next()
            .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok());
        nr == libc::SYS_futex && addr.is_some_and(|a| (lo..hi).contains(&a))
    })
}

/// A semaphore another user created (a service's, looked at by root, or
/// shared with a group on purpose): the command line only looks, so it
/// attaches whatever the owner, where the file's mode lets it open it.
/// Before, `sudo volt-sem inspect gpu` said "permission denied". Runs as
/// root only (it makes the semaphore as the user nobody).
#[test]
fn a_semaphore_of_another_user_can_be_inspected() {
    // SAFETY: plain syscall.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to create a semaphore as another user");
        return;
    }
    let name = Name::new("foreign");
    let _holder = Holder::spawn_as(65534, "hold", &name.0, 4, 1, "service");
    let meta = std::fs::metadata(name.path()).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&meta), 65534);
    let v = inspect_json(name.s());
    assert_eq!(v["holders"][0]["label"], "service", "{v}");
    assert_eq!(
        (v["total"].as_u64(), v["available"].as_u64()),
        (Some(4), Some(3))
    );
    let text = ok(&["ls"]);
    let row = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&name.0))
        .unwrap();
    assert_eq!(
        &row.split_whitespace().collect::<Vec<_>>()[1..],
        ["4", "3", "1", "0"]
    );
    assert!(ok(&["watch", name.s(), "--count", "1"]).contains("service"));
    assert_eq!(
        ok(&["resize", name.s(), "5"]),
        format!("{}: total 4 -> 5\n", name.0)
    );

    // Where the mode does not let it open the file (root's semaphore, mode
    // 0600, looked at by nobody): the error says whose it is.
    let mine = Name::new("root-only");
    let _sem =
        volt_sem_shm::SharedSemaphore::open(mine.s(), 1, volt_sem_shm::OpenOptions::new()).unwrap();
    let o = volt_sem_as(Some(65534), &["inspect", mine.s()]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "volt-sem: {}: permission denied ({}: owner uid 0, mode 600)\n",
            mine.0,
            mine.path()
        )
    );
}

/// A process stopped inside the segment's lock (SIGSTOP, a debugger): the
/// commands that must take the lock give up after their bound with an
/// error that says what is wrong, not "timed out waiting for permits"
/// (nothing waited for permits).
#[test]
fn a_lock_held_by_a_stopped_process_is_reported_as_such() {
    let name = Name::new("stopped-lock");
    let (mut holder, go) = stopper(&name);
    std::fs::write(&go, "").unwrap();
    eventually(
        "the holder stopped inside the lock",
        Duration::from_secs(30),
        || holder.stopped(),
    );
    let expected = format!(
        "{}: timed out waiting for the semaphore's lock \
         (a process is stopped or stuck inside an operation on it)",
        name.0
    );
    let (code, err) = fails(&["inspect", name.s()]);
    let text = ok(&["ls"]);
    holder.kill9();
    let _ = std::fs::remove_file(&go);
    assert_eq!((code, err), (1, format!("volt-sem: {expected}")));
    let row = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&name.0))
        .unwrap();
    assert!(row.ends_with(expected.split_once(": ").unwrap().1), "{row}");
}

/// A process that stops inside the segment's lock while `watch` runs: the
/// next refresh gives up after its bound with the same error as `inspect`,
/// rather than freezing the screen for as long as the process stays
/// stopped.
#[test]
fn watch_reports_a_lock_holder_that_stops() {
    let name = Name::new("watch-stopped-lock");
    let (mut holder, go) = stopper(&name);
    let (mut watch, mut frames) = watch_json(&[name.s(), "--interval", "0.05"]);
    assert!(frames.next().unwrap().unwrap().contains("stopper"));
    std::fs::write(&go, "").unwrap();
    let reader = std::thread::spawn(move || frames.count());
    let ended = exits_within(&mut watch, Duration::from_secs(30));
    let was_stopped = holder.stopped();
    holder.kill9();
    if ended.is_none() {
        // It froze: once unblocked it would go on for ever.
        let _ = watch.kill();
    }
    let out = watch.wait_with_output().unwrap();
    let _ = reader.join();
    let _ = std::fs::remove_file(&go);
    assert!(was_stopped);
    assert!(
        ended.is_some(),
        "the watch froze ({:?} once the holder was killed)",
        out.status
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "volt-sem: {}: timed out waiting for the semaphore's lock \
             (a process is stopped or stuck inside an operation on it)\n",
            name.0
        )
    );
}

/// A command that attached, then finds the segment's lock held by a process
/// stopped inside it (the command stops itself once attached, through its
/// test hook, while the other process stops in the lock): `resize`,
/// `reopen` and `inspect` end within their bound with the lock error, exit
/// code 1. Before, `resize` and `reopen` waited for the lock for ever, and
/// `inspect`, whose look was bounded, for ever in its handle's detach.
fn lock_stopped_after_attach(tag: &str, args: &[&str]) {
    let name = Name::new(tag);
    let (mut holder, go) = stopper(&name);
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "NAME" { name.s() } else { a })
        .collect();
    let cli = std::process::Command::new(env!("CARGO_BIN_EXE_volt-sem"))
        .args(&args)
        .env("VOLT_SEM_CLI_TEST_STOP_AFTER_ATTACH", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = cli.id();
    let stopped = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('T'))
    };
    eventually(
        "the command stopped once attached",
        Duration::from_secs(30),
        || stopped(pid),
    );
    std::fs::write(&go, "").unwrap();
    eventually(
        "the holder stopped inside the lock",
        Duration::from_secs(30),
        || holder.stopped(),
    );
    // SAFETY: plain syscall on our child's pid.
    unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    let mut cli = cli;
    let ended = exits_within(&mut cli, Duration::from_secs(30));
    if ended.is_none() {
        let _ = cli.kill();
    }
    let out = cli.wait_with_output().unwrap();
    holder.kill9();
    let _ = std::fs::remove_file(&go);
    assert!(
        ended.is_some(),
        "{args:?} hung on the stopped lock holder (killed after 30 s)"
    );
    assert_eq!(out.status.code(), Some(1), "{args:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "volt-sem: {}: timed out waiting for the semaphore's lock \
             (a process is stopped or stuck inside an operation on it)\n",
            name.0
        ),
        "{args:?}"
    );
}

#[test]
fn resize_gives_up_on_a_lock_holder_stopped_after_the_attach() {
    lock_stopped_after_attach("resize-stopped", &["resize", "NAME", "3"]);
}

#[test]
fn reopen_gives_up_on_a_lock_holder_stopped_after_the_attach() {
    lock_stopped_after_attach("reopen-stopped", &["reopen", "NAME"]);
}

#[test]
fn inspect_gives_up_on_a_lock_holder_stopped_after_the_attach() {
    lock_stopped_after_attach("inspect-stopped", &["inspect", "NAME", "--json"]);
}

/// A name in Chinese (two terminal columns a character) next to ASCII
/// ones: `ls`'s TOTAL column starts at the same terminal column in the
/// header and in every row. Before, a CJK name was padded by its
/// characters, not its columns, and pushed the rest of its row right.
#[test]
fn tables_align_wide_characters() {
    let wide = Name::new("信号量");
    let narrow = Name::new("narrow");
    let opts = volt_sem_shm::OpenOptions::new;
    let _w = volt_sem_shm::SharedSemaphore::open(wide.s(), 2, opts()).unwrap();
    let _n = volt_sem_shm::SharedSemaphore::open(narrow.s(), 2, opts()).unwrap();
    // What a terminal shows: CJK ideographs take two columns.
    let cols = |s: &str| -> usize {
        s.chars()
            .map(|c| 1 + usize::from(('\u{4e00}'..='\u{9fff}').contains(&c)))
            .sum()
    };
    // Where the second column starts: after the first and its padding.
    let second = |l: &str| {
        let end = l.find("  ").unwrap();
        let rest = &l[end..];
        cols(&l[..end]) + rest.len() - rest.trim_start().len()
    };
    let text = ok(&["ls"]);
    let row = |n: &Name| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(n.s()))
            .unwrap_or_else(|| panic!("{} not in\n{text}", n.0))
    };
    let at = [
        second(text.lines().next().unwrap()),
        second(row(&wide)),
        second(row(&narrow)),
    ];
    assert!(at.iter().all(|&c| c == at[0]), "{at:?}\n{text}");
}
