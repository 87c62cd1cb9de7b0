//! The Linux layer: POSIX shared memory, the robust process-shared mutex, OFD
//! byte locks for liveness, shared futexes for doorbells.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::ffi::CString;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::segment::{
    Locked, Segment, LAYOUT_VERSION, LOCK_ABI, MAGIC, MAX_PROCESSES, SEGMENT_SIZE,
};

/// The byte of the segment file whose OFD lock serialises creation and
/// attachment (bytes `0..MAX_PROCESSES` are the process records' liveness locks).
const INIT_BYTE: i64 = MAX_PROCESSES as i64;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn os_error(e: i32) -> Error {
    match e {
        libc::EACCES | libc::EPERM => Error::PermissionDenied,
        libc::ENOENT => Error::NotFound,
        libc::EEXIST => Error::AlreadyExists,
        libc::ENAMETOOLONG | libc::EINVAL => Error::InvalidName,
        // Something else than a file holds the name (`unlink` of a directory).
        libc::EISDIR => Error::NotASegment,
        e => Error::Os(e),
    }
}

/// The error of a failed `shm_open` of a valid name. glibc turns EISDIR into
/// EINVAL there; a directory at the name is not a segment, not a bad name.
fn open_error(path: &CString, e: i32) -> Error {
    if e == libc::EINVAL {
        let dev_shm = format!("/dev/shm{}", path.to_string_lossy());
        if std::fs::symlink_metadata(dev_shm).is_ok_and(|m| m.is_dir()) {
            return Error::NotASegment;
        }
    }
    os_error(e)
}

/// `"/volt-sem.<name>"`, for `shm_open`.
pub(crate) fn shm_path(name: &str) -> Result<CString, Error> {
    crate::validate_name(name)?;
    CString::new(format!("/{}{name}", crate::NAME_PREFIX)).map_err(|_| Error::InvalidName)
}

/// How `open` treats an existing or missing name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Create {
    OrAttach,
    Only,
    AttachOnly,
}

/// An open segment: the fd (which carries this process's OFD locks) and the mapping.
pub(crate) struct Mapping {
    pub(crate) fd: libc::c_int,
    pub(crate) seg: NonNull<Segment>,
    pub(crate) dev_ino: (u64, u64),
    /// Set by [`release`](Self::release): the mapping and the fd are gone.
    released: AtomicBool,
}

// SAFETY: the mapping is shared memory made only of atomics (and the
// process-shared mutex); the fd is a plain integer.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    pub(crate) fn seg(&self) -> &Segment {
        // SAFETY: mapped for as long as `self` lives, size checked at open.
        unsafe { self.seg.as_ref() }
    }
}

impl Mapping {
    /// Unmaps the segment and closes the fd, once (later calls, and the drop,
    /// do nothing): the mapping's and the fd's references to the open file
    /// description go, and with the last of them the OFD locks taken through
    /// it.
    ///
    /// # Safety
    ///
    /// Nothing reads the segment through this mapping (`seg`) or uses `fd`
    /// afterwards.
    pub(crate) unsafe fn release(&self) {
        if self.released.swap(true, Ordering::Relaxed) {
            return;
        }
        // SAFETY: our own mapping and fd, released once (the flag above);
        // the caller guarantees that nothing uses them afterwards.
        unsafe {
            libc::munmap(self.seg.as_ptr().cast(), SEGMENT_SIZE);
            libc::close(self.fd);
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: dropped: nothing can use the mapping or the fd any more.
        unsafe { self.release() };
    }
}

/// An fd that is closed on drop unless taken.
struct Fd(libc::c_int);
impl Drop for Fd {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // SAFETY: our own fd.
            unsafe { libc::close(self.0) };
        }
    }
}
impl Fd {
    fn take(mut self) -> libc::c_int {
        core::mem::replace(&mut self.0, -1)
    }
}

/// Opens (creating and initialising if allowed and needed) the segment, and
/// maps it. Holds the init lock from the open to the return, so that exactly
/// one process initialises a segment and nobody maps a half-initialised one,
/// and returns it held ([`InitLock`]: the caller attaches under it, then
/// drops it). Returns whether this call initialised it. An existing segment with
/// another total is refused (`TotalMismatch`) unless `resize` (the caller
/// then changes the total under the segment lock).
pub(crate) fn open_segment(
    name: &str,
    total: Option<u64>,
    create: Create,
    mode: u32,
    accept_foreign_owner: bool,
    resize: bool,
    deadline: Instant,
) -> Result<(Mapping, bool, InitLock), Error> {
    let path = shm_path(name)?;
    for _ in 0..100 {
        let opened = open_once(
            &path,
            total,
            create,
            mode,
            accept_foreign_owner,
            resize,
            deadline,
        )?;
        if let Some(opened) = opened {
            return Ok(opened);
        }
    }
    Err(Error::Os(libc::EAGAIN))
}

/// One attempt of `open_segment`; `None`: the file we opened lost its name
/// before we got its init lock (a creator that failed to allocate it took it
/// away, or `unlink`): open the name again, so that we never initialise or
/// attach a segment nobody else can reach by its name.
fn open_once(
    path: &CString,
    total: Option<u64>,
    create: Create,
    mode: u32,
    accept_foreign_owner: bool,
    resize: bool,
    deadline: Instant,
) -> Result<Option<(Mapping, bool, InitLock)>, Error> {
    let (fd, created) = shm_open(path, create, mode)?;
    let fd = Fd(fd);
    if created {
        // shm_open's mode went through the umask. Owner read and write
        // first, so that the init lock's own open below works whatever the
        // mode (only the owner gains anything, for microseconds); then
        // exactly what was asked.
        // SAFETY: plain syscall on our fd.
        if unsafe { libc::fchmod(fd.0, (mode | 0o600) as libc::mode_t) } != 0 {
            return Err(os_error(errno()));
        }
    } else if !accept_foreign_owner {
        // Before the init lock, which the owner could hold forever: a
        // segment another user owns is theirs to rewrite (name squatting).
        // SAFETY: geteuid cannot fail.
        if file_stat(fd.0)?.st_uid != unsafe { libc::geteuid() } {
            return Err(Error::PermissionDenied);
        }
    }
    let init_lock = InitLock::open(path, &file_stat(fd.0)?);
    if created && mode & 0o600 != 0o600 {
        // SAFETY: plain syscall on our fd.
        if unsafe { libc::fchmod(fd.0, mode as libc::mode_t) } != 0 {
            return Err(os_error(errno()));
        }
    }
    let Some(init_lock) = init_lock? else {
        // The name is another file's already: as if this one lost its name.
        return Ok(None);
    };
    init_lock.lock(deadline)?;
    crate::hooks::in_open_holding_init_lock(path);
    // From here the init lock is held (dropped with `init_lock` on error, or
    // by the caller once attached).
    let st = file_stat(fd.0)?;
    if st.st_nlink == 0 {
        return Ok(None);
    }
    let size = st.st_size as u64;
    let mut init = false;
    // Without a total (`SharedSemaphore::attach`) a segment that needs
    // initialising cannot be: its creator died before finishing it, so no
    // semaphore exists under the name yet.
    let Some(total) = total.or_else(|| existing_total(fd.0, size)) else {
        return Err(Error::NotFound);
    };
    if size == 0 {
        // Created by us, or by a process that died (or has not yet taken the
        // init lock) before sizing it: whoever holds the init lock sizes and
        // initialises it.
        if let Err(e) = allocate(fd.0) {
            if created {
                // Nothing was written: take our empty file away again rather
                // than leave a name that looks taken.
                // SAFETY: valid C string.
                unsafe { libc::shm_unlink(path.as_ptr()) };
            }
            return Err(e);
        }
        init = true;
    } else {
        let mut head = [0u8; 32];
        // SAFETY: reads into our buffer; pread does not fault on a short file
        // (mapping a truncated file would SIGBUS instead).
        let got = unsafe { libc::pread(fd.0, head.as_mut_ptr().cast(), head.len(), 0) };
        if got != head.len() as isize {
            return Err(Error::NotASegment);
        }
        let word = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().unwrap());
        let magic = word(0);
        let version = u32::from_le_bytes(head[8..12].try_into().unwrap());
        let lock_abi = u32::from_le_bytes(head[12..16].try_into().unwrap());
        if magic == 0 {
            // Sized, magic not written: its creator died half-way through
            // `init` (the magic, one aligned store, is written last), since
            // a creator holds the init lock, which we hold now, until its
            // segment is complete. Whatever else it wrote is overwritten.
            // Also a creator of another layout version (a release of
            // another segment size, in a rolling deploy): every release
            // holds the same init lock until its magic is written, so
            // nobody has this file mapped; it gets our size. Its file may
            // be sparse (sized by an older version with ftruncate):
            // allocate it before the first store.
            if size != SEGMENT_SIZE as u64 {
                // SAFETY: plain syscall on our fd.
                if unsafe { libc::ftruncate(fd.0, SEGMENT_SIZE as libc::off_t) } != 0 {
                    return Err(os_error(errno()));
                }
            }
            allocate(fd.0)?;
            init = true;
        } else if magic != MAGIC {
            return Err(Error::NotASegment);
        } else if version != LAYOUT_VERSION {
            return Err(Error::VersionMismatch {
                found: version,
                expected: LAYOUT_VERSION,
            });
        } else if lock_abi != LOCK_ABI {
            return Err(Error::LibcMismatch {
                found: lock_abi,
                expected: LOCK_ABI,
            });
        } else if size != SEGMENT_SIZE as u64 || word(16) != SEGMENT_SIZE as u64 {
            return Err(Error::NotASegment);
        } else if word(24) != total && !resize {
            return Err(Error::TotalMismatch { existing: word(24) });
        }
    }
    // SAFETY: maps SEGMENT_SIZE bytes of a file of exactly that size.
    let ptr = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            SEGMENT_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.0,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(os_error(errno()));
    }
    let mapping = Mapping {
        fd: fd.take(),
        seg: NonNull::new(ptr.cast()).expect("mmap returned null"),
        dev_ino: (st.st_dev, st.st_ino),
        released: AtomicBool::new(false),
    };
    if init {
        let seg = mapping.seg();
        init_mutex(seg)?;
        Locked::new(seg).init(total);
        // Release: whoever reads the magic sees an initialised segment.
        seg.hdr.magic.store(MAGIC, Ordering::Release);
    }
    Ok(Some((mapping, init, init_lock)))
}

/// The total of an initialised segment's header (`None`: the file is too
/// short, or its magic is not written yet; the checks of `open_once` then
/// decide). Read with `pread`, like them.
fn existing_total(fd: libc::c_int, size: u64) -> Option<u64> {
    let mut head = [0u8; 32];
    if size < head.len() as u64 {
        return None;
    }
    // SAFETY: reads into our buffer; pread does not fault on a short file.
    let got = unsafe { libc::pread(fd, head.as_mut_ptr().cast(), head.len(), 0) };
    let word = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().unwrap());
    (got == head.len() as isize && word(0) != 0).then(|| word(24))
}

/// The names of the semaphores of this machine: the entries of `/dev/shm`
/// whose name starts with [`NAME_PREFIX`](crate::NAME_PREFIX), without it.
pub(crate) fn list() -> Result<Vec<String>, Error> {
    let dir = std::fs::read_dir("/dev/shm")
        .map_err(|e| e.raw_os_error().map_or(Error::Os(libc::EIO), os_error))?;
    let mut names: Vec<String> = dir
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|f| f.strip_prefix(crate::NAME_PREFIX).map(str::to_owned))
        .filter(|n| crate::validate_name(n).is_ok())
        .collect();
    names.sort();
    Ok(names)
}

pub(crate) fn file_stat(fd: libc::c_int) -> Result<libc::stat, Error> {
    // SAFETY: a zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: valid fd and out-pointer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(os_error(errno()));
    }
    Ok(st)
}

/// Sizes the segment file and allocates all its pages, so that no store into
/// the mapping can fault: on tmpfs a file sized with `ftruncate` is sparse,
/// and the first store into a page a full `/dev/shm` cannot provide raises
/// `SIGBUS`. A full `/dev/shm` is `Error::Os(ENOSPC)` here instead, and the
/// file is left as it was (tmpfs undoes a failed `fallocate`).
fn allocate(fd: libc::c_int) -> Result<(), Error> {
    loop {
        // SAFETY: plain syscall on our fd; returns the error number.
        match unsafe { libc::posix_fallocate(fd, 0, SEGMENT_SIZE as libc::off_t) } {
            0 => return Ok(()),
            libc::EINTR => continue,
            e => return Err(os_error(e)),
        }
    }
}

/// The segment's init lock, held through an open file description of its
/// own: a second `shm_open` of the name, never mapped, closed (which
/// releases the lock) on drop.
///
/// # Why not the segment's fd
///
/// The init lock is an OFD lock: it belongs to the open file description and
/// lasts until the last reference to it goes. A `fork()` by another thread
/// while this process's `open` holds the lock copies every fd, this one
/// included, into the child; if the parent is then killed before it
/// releases the lock, the child's copy keeps it held for as long as the
/// child lives, and every `open` of the name (the child's own first) times
/// out. The segment's own fd cannot be taken from the child (its mapping
/// references the same description too, and is the child's copy of the
/// parent's handles). This one is only an fd, and every one in use is in
/// [`InIt`]'s list, which a `pthread_atfork` child handler
/// ([`after_fork_in_child`]) closes: a fork child never holds an init lock.
pub(crate) struct InitLock {
    fd: libc::c_int,
}

/// The fds of this process's [`InitLock`]s, guarded by a gate (a spin lock
/// on an atomic) that the fork handlers take around `fork()`
/// ([`before_fork`], [`after_fork_in_parent`], [`after_fork_in_child`]). An
/// `InitLock` opens its fd and lists it, and unlists and closes it, inside
/// the gate, so a fork never copies an init-lock fd that the child's list
/// does not name, nor a listed number that another fd reuses.
struct InIt {
    gate: AtomicBool,
    fds: core::cell::UnsafeCell<Vec<libc::c_int>>,
}

// SAFETY: `fds` is only touched by the holder of `gate` (Acquire to take,
// Release to give back).
unsafe impl Sync for InIt {}

static IN_INIT: InIt = InIt {
    gate: AtomicBool::new(false),
    fds: core::cell::UnsafeCell::new(Vec::new()),
};

impl InIt {
    fn enter(&self) {
        while self
            .gate
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // Held for one `shm_open` or `close` (and a push) at most.
            std::thread::yield_now();
        }
    }

    fn leave(&self) {
        self.gate.store(false, Ordering::Release);
    }

    /// # Safety
    ///
    /// The caller holds the gate.
    #[allow(clippy::mut_from_ref)]
    unsafe fn fds(&self) -> &mut Vec<libc::c_int> {
        // SAFETY: the caller holds the gate, so this is the only reference.
        unsafe { &mut *self.fds.get() }
    }
}

/// `pthread_atfork` prepare handler (registered by `imp::watch_forks`
/// before any `open` takes an init lock): holds the gate across the fork,
/// so that no `InitLock` is half-way between its fd and the list. Runs in
/// the forking thread in an ordinary context; waits for one `shm_open` or
/// `close` at most. (A fork from a signal handler that interrupted a thread
/// holding the gate would wait for ever: POSIX does not allow `fork()` there
/// with fork handlers in the process.)
pub(crate) fn before_fork() {
    IN_INIT.enter();
}

/// `pthread_atfork` parent handler: gives the gate back.
pub(crate) fn after_fork_in_parent() {
    IN_INIT.leave();
}

/// `pthread_atfork` child handler: closes the child's copies of the
/// init-lock fds of the parent's `open`s in progress, which belong to
/// threads the child does not have, so the child never holds an init lock
/// (the parent's copies hold it until their `open` ends, or their process
/// dies). Async-signal-safe: `close` and plain memory writes (the list is
/// emptied without freeing it). The child's own later `open`s of the name
/// take the lock through fds of their own, and wait for the parent's as
/// any other process does. The parent's `open` is untouched: its fd is its
/// own, the close only drops the child's reference to the description.
pub(crate) fn after_fork_in_child() {
    // SAFETY: the prepare handler took the gate in the forking thread, the
    // only thread of the child: the list is ours, and complete.
    let fds = unsafe { IN_INIT.fds() };
    for &fd in fds.iter() {
        // SAFETY: an fd of the list, open in the parent at the fork (listed
        // and unlisted under the gate), so copied into the child, where
        // nothing else uses it (its `InitLock` is on a parent thread's
        // stack, which the child never runs).
        unsafe { libc::close(fd) };
    }
    fds.clear();
    IN_INIT.leave();
}

impl InitLock {
    /// Opens the name again for its init lock (not taken yet); `None`: the
    /// name is no longer the file `st` describes (unlinked, or replaced).
    fn open(path: &CString, st: &libc::stat) -> Result<Option<InitLock>, Error> {
        IN_INIT.enter();
        // SAFETY: valid C string.
        let fd = unsafe { libc::shm_open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC, 0) };
        let e = errno();
        if fd >= 0 {
            // SAFETY: we hold the gate.
            unsafe { IN_INIT.fds() }.push(fd);
        }
        IN_INIT.leave();
        if fd < 0 {
            return match e {
                libc::ENOENT => Ok(None),
                e => Err(open_error(path, e)),
            };
        }
        let lock = InitLock { fd };
        let mine = file_stat(fd)?;
        Ok((mine.st_dev == st.st_dev && mine.st_ino == st.st_ino).then_some(lock))
    }

    /// Takes the init lock, waiting at most until `deadline` (then
    /// `Error::TimedOut`). Held for microseconds by a running opener; longer
    /// only by a process stopped half-way through its `open`, or by one
    /// that locks the byte on purpose (a read lock suffices, so anyone who
    /// can read the file can): `open` must not wait for ever for either.
    /// Polled, since OFD locks have no timed wait.
    fn lock(&self, deadline: Instant) -> Result<(), Error> {
        let mut pause = Duration::from_micros(50);
        loop {
            if ofd_lock(self.fd, INIT_BYTE, false).map_err(os_error)? {
                return Ok(());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::TimedOut);
            }
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(Duration::from_millis(10));
        }
    }
}

impl Drop for InitLock {
    /// Releases the lock: closes the fd (the description's only reference
    /// in this process), inside the gate.
    fn drop(&mut self) {
        IN_INIT.enter();
        // SAFETY: we hold the gate.
        let fds = unsafe { IN_INIT.fds() };
        if let Some(i) = fds.iter().position(|&f| f == self.fd) {
            fds.swap_remove(i);
        }
        // SAFETY: our own fd, closed once.
        unsafe { libc::close(self.fd) };
        IN_INIT.leave();
    }
}

fn shm_open(path: &CString, create: Create, mode: u32) -> Result<(libc::c_int, bool), Error> {
    let rw = libc::O_RDWR | libc::O_CLOEXEC;
    let excl = rw | libc::O_CREAT | libc::O_EXCL;
    for _ in 0..100 {
        let try_create = create != Create::AttachOnly;
        if try_create {
            // SAFETY: valid C string.
            let fd = unsafe { libc::shm_open(path.as_ptr(), excl, mode as libc::mode_t) };
            if fd >= 0 {
                return Ok((fd, true));
            }
            let e = errno();
            if e != libc::EEXIST || create == Create::Only {
                return Err(open_error(path, e));
            }
        }
        // SAFETY: valid C string.
        let fd = unsafe { libc::shm_open(path.as_ptr(), rw, 0) };
        if fd >= 0 {
            return Ok((fd, false));
        }
        let e = errno();
        if e != libc::ENOENT || create == Create::AttachOnly {
            return Err(open_error(path, e));
        }
        // Unlinked between our two calls: try again.
    }
    Err(Error::Os(libc::EAGAIN))
}

/// Removes the name; processes attached keep their segment.
pub(crate) fn unlink(name: &str) -> Result<(), Error> {
    let path = shm_path(name)?;
    // SAFETY: valid C string.
    if unsafe { libc::shm_unlink(path.as_ptr()) } != 0 {
        return Err(os_error(errno()));
    }
    Ok(())
}

fn init_mutex(seg: &Segment) -> Result<(), Error> {
    const _: () = assert!(
        core::mem::size_of::<libc::pthread_mutex_t>()
            <= core::mem::size_of::<crate::segment::LockCell>()
    );
    let m = mutex_ptr(seg);
    // SAFETY: attr is initialised by pthread_mutexattr_init before use; `m`
    // points into our mapping, which nobody else uses before the magic is set.
    unsafe {
        let mut attr: libc::pthread_mutexattr_t = core::mem::zeroed();
        let mut r = libc::pthread_mutexattr_init(&mut attr);
        if r == 0 {
            r = libc::pthread_mutexattr_setpshared(&mut attr, libc::PTHREAD_PROCESS_SHARED);
        }
        if r == 0 {
            r = libc::pthread_mutexattr_setrobust(&mut attr, libc::PTHREAD_MUTEX_ROBUST);
        }
        if r == 0 {
            r = libc::pthread_mutex_init(m, &attr);
        }
        libc::pthread_mutexattr_destroy(&mut attr);
        if r != 0 {
            return Err(Error::Os(r));
        }
    }
    Ok(())
}

/// The segment's mutex: a pointer into the lock cell's `UnsafeCell`, so that
/// the pthread functions may write through it while `&Segment`s are shared.
fn mutex_ptr(seg: &Segment) -> *mut libc::pthread_mutex_t {
    seg.lock.0.get().cast()
}

/// What taking the segment lock found.
pub(crate) enum LockState {
    /// The previous owner unlocked normally.
    Clean,
    /// The previous owner died holding it: the caller must repair, then call
    /// `mark_consistent`, before unlocking.
    OwnerDied,
}

/// `pthread_mutex_clocklock`'s type (glibc 2.30 and later).
type ClockLockFn = unsafe extern "C" fn(
    *mut libc::pthread_mutex_t,
    libc::clockid_t,
    *const libc::timespec,
) -> libc::c_int;

/// `clocklock()`'s cache: `LOOKUP` until the first timed lock, then the
/// function's address, or 0 when the C library has none (or it refused
/// `CLOCK_MONOTONIC`).
static CLOCKLOCK: AtomicUsize = AtomicUsize::new(LOOKUP);
const LOOKUP: usize = 1;
/// Tests only (`hooks::force_realtime_timed_lock`): use the fallback.
pub(crate) static FORCE_REALTIME: AtomicBool = AtomicBool::new(false);

/// `pthread_mutex_clocklock`, looked up at run time: it appeared in glibc
/// 2.30, newer than the glibc the manylinux wheels are built against, so a
/// direct call would not load on the oldest systems they support. `None`
/// where the C library lacks it (glibc before 2.30; musl has none either):
/// the timed lock then falls back to `pthread_mutex_timedlock` (see `lock`).
fn clocklock() -> Option<ClockLockFn> {
    if FORCE_REALTIME.load(Ordering::Relaxed) {
        return None;
    }
    let mut f = CLOCKLOCK.load(Ordering::Relaxed);
    if f == LOOKUP {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only
        // reads; it returns null when no loaded object defines the name.
        f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"pthread_mutex_clocklock".as_ptr()) }
            as usize;
        // Racing lookups store the same value.
        CLOCKLOCK.store(f, Ordering::Relaxed);
    }
    if f == 0 || f == LOOKUP {
        return None;
    }
    // SAFETY: a non-null address dlsym gave for `pthread_mutex_clocklock`,
    // whose C type (glibc's <pthread.h>) is `ClockLockFn`.
    Some(unsafe { core::mem::transmute::<usize, ClockLockFn>(f) })
}

/// Which clock a timed lock waits on here: `CLOCK_MONOTONIC` with
/// `pthread_mutex_clocklock`, or `CLOCK_REALTIME` with the fallback
/// (`hooks::timed_lock_clock`).
pub(crate) fn timed_lock_is_monotonic() -> bool {
    clocklock().is_some()
}

/// `clock_gettime(clock)` plus `left`, as an absolute timespec (clamped at
/// the largest one).
// `libc::time_t`: see `lock`.
#[allow(deprecated)]
fn clock_after(clock: libc::clockid_t, left: Duration) -> libc::timespec {
    // SAFETY: a zeroed timespec is a valid out-parameter.
    let mut now: libc::timespec = unsafe { core::mem::zeroed() };
    // SAFETY: valid clock id and out-pointer; cannot fail for these clocks.
    unsafe { libc::clock_gettime(clock, &mut now) };
    let at = Duration::new(
        now.tv_sec.max(0) as u64,
        now.tv_nsec.clamp(0, 999_999_999) as u32,
    )
    .saturating_add(left);
    libc::timespec {
        tv_sec: at.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: at.subsec_nanos() as libc::c_long,
    }
}

/// Takes the segment's robust lock, waiting at most until `deadline` (then
/// `Error::TimedOut`; `None`: no deadline). A deadline in the past still takes
/// a free lock (one attempt). The wait is what a process stopped (`SIGSTOP`)
/// inside the lock costs the others: only the calls without a deadline wait
/// for it to continue or die.
///
/// The timed wait runs on `CLOCK_MONOTONIC` (`pthread_mutex_clocklock`,
/// glibc 2.30 and later, looked up at run time), as `Instant` does, so that
/// a step of the wall clock (NTP, an administrator, a VM resumed) neither
/// cuts it short nor stretches it. Where the C library has no
/// `pthread_mutex_clocklock`, it falls back to `pthread_mutex_timedlock`,
/// which only takes a `CLOCK_REALTIME` time: the remaining monotonic wait
/// is added to the wall-clock time now, and a wall-clock step during the
/// wait shortens or lengthens it by the step.
// `libc::time_t` is deprecated on musl targets only (musl 1.2 made it 64-bit
// and the libc crate will follow): it is what `timespec::tv_sec` is, on every
// target, so it stays the right type to cast to and clamp at.
#[allow(deprecated)]
pub(crate) fn lock(seg: &Segment, deadline: Option<Instant>) -> Result<LockState, Error> {
    let r = match deadline {
        // SAFETY: the mutex was initialised (the magic is set) and is process-shared.
        None => unsafe { libc::pthread_mutex_lock(mutex_ptr(seg)) },
        Some(d) => {
            let left = d.saturating_duration_since(Instant::now());
            let monotonic = clocklock().map(|f| {
                let ts = clock_after(libc::CLOCK_MONOTONIC, left);
                // SAFETY: as above; `ts` is a valid timespec; `f` is
                // pthread_mutex_clocklock.
                unsafe { f(mutex_ptr(seg), libc::CLOCK_MONOTONIC, &ts) }
            });
            match monotonic {
                // EINVAL: this clock is refused (a C library that has the
                // function for some clocks only); never again, fall back.
                Some(libc::EINVAL) => {
                    CLOCKLOCK.store(0, Ordering::Relaxed);
                    timed_lock_realtime(seg, left)
                }
                Some(r) => r,
                None => timed_lock_realtime(seg, left),
            }
        }
    };
    match r {
        0 => Ok(LockState::Clean),
        libc::EOWNERDEAD => Ok(LockState::OwnerDied),
        libc::ETIMEDOUT => Err(Error::TimedOut),
        libc::ENOTRECOVERABLE => Err(Error::Corrupt),
        e => Err(Error::Os(e)),
    }
}

/// The fallback of `lock`: `pthread_mutex_timedlock`, which waits until a
/// `CLOCK_REALTIME` time, `left` after the wall-clock time now.
fn timed_lock_realtime(seg: &Segment, left: Duration) -> libc::c_int {
    let ts = clock_after(libc::CLOCK_REALTIME, left);
    // SAFETY: the mutex was initialised (the magic is set) and is
    // process-shared; `ts` is a valid timespec.
    unsafe { libc::pthread_mutex_timedlock(mutex_ptr(seg), &ts) }
}

pub(crate) fn mark_consistent(seg: &Segment) {
    // SAFETY: we hold the lock in the EOWNERDEAD state.
    unsafe { libc::pthread_mutex_consistent(mutex_ptr(seg)) };
}

pub(crate) fn unlock(seg: &Segment) {
    // SAFETY: we hold the lock.
    unsafe { libc::pthread_mutex_unlock(mutex_ptr(seg)) };
}

fn flock(kind: libc::c_int, byte: i64) -> libc::flock {
    // SAFETY: all-zero is a valid flock (l_pid must be 0 for OFD locks).
    let mut fl: libc::flock = unsafe { core::mem::zeroed() };
    fl.l_type = kind as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = byte as libc::off_t;
    fl.l_len = 1;
    fl
}

/// Takes the OFD write lock on one byte. `Ok(false)`: somebody else holds it
/// (only when `wait` is false).
pub(crate) fn ofd_lock(fd: libc::c_int, byte: i64, wait: bool) -> Result<bool, i32> {
    let fl = flock(libc::F_WRLCK, byte);
    let cmd = if wait {
        libc::F_OFD_SETLKW
    } else {
        libc::F_OFD_SETLK
    };
    loop {
        // SAFETY: valid fd and flock.
        if unsafe { libc::fcntl(fd, cmd, &fl) } == 0 {
            return Ok(true);
        }
        match errno() {
            libc::EINTR => continue,
            libc::EAGAIN | libc::EACCES if !wait => return Ok(false),
            e => return Err(e),
        }
    }
}

/// Whether record `byte`'s liveness lock is free, i.e. its owner is dead (the
/// kernel drops OFD locks when the last fd and mapping of the owner's open
/// file description go away, on any death including SIGKILL). An error of the
/// probe itself counts as alive: never reclaim on doubt.
pub(crate) fn owner_dead(fd: libc::c_int, byte: u32) -> bool {
    let mut fl = flock(libc::F_WRLCK, byte as i64);
    // SAFETY: valid fd and flock.
    if unsafe { libc::fcntl(fd, libc::F_OFD_GETLK, &mut fl) } != 0 {
        return false;
    }
    fl.l_type == libc::F_UNLCK as libc::c_short
}

/// Waits on a shared (non-private) futex while `*word == seen`.
// `libc::time_t`: see `lock`.
#[allow(deprecated)]
pub(crate) fn futex_wait(word: &AtomicU32, seen: u32, timeout: Option<Duration>) {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(core::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a valid aligned u32 in shared memory; FUTEX_WAIT
    // without FUTEX_PRIVATE_FLAG keys it by the physical page, so waits and
    // wakes meet across processes.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            seen,
            tsp,
            core::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wakes the waiters of a shared futex.
pub(crate) fn futex_wake(word: &AtomicU32) {
    // SAFETY: as in `futex_wait`.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            core::ptr::null::<libc::timespec>(),
            core::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// This process's start time (clock ticks since boot), for diagnostics.
pub(crate) fn start_time() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Field 22; the command name (field 2) may contain spaces, so count from
    // the last ')'.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(19))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

pub(crate) fn pid() -> u32 {
    std::process::id()
}
