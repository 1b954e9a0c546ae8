//! A value built in the background. A Lambda cold start is on the caller's
//! path, and the SDK's configuration (which loads the system's root
//! certificates) takes milliseconds of CPU. Started when the first request
//! arrives (`start`), it competes with nothing before the runtime's first
//! poll, and it overlaps the request's own work (verifying the token) until
//! the first DynamoDB read waits for what is left of it. (`make bench`
//! measured the alternatives: started at process start, on a worker or on a
//! lower-priority thread of its own, it delayed the first poll 2-3×.)

use std::future::Future;
use std::pin::Pin;

use tokio::sync::OnceCell;
use tokio::task::JoinHandle;

type Build<T> = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = T> + Send>> + Send>;

enum Stage<T> {
    Waiting(Build<T>),
    Running(JoinHandle<T>),
    Done,
}

/// A value that is ready, or built by a task started on first use.
pub struct Deferred<T> {
    value: OnceCell<T>,
    stage: std::sync::Mutex<Stage<T>>,
}

impl<T: Send + 'static> Deferred<T> {
    /// A value built by `build`, started by the first `start` or `get`.
    pub fn on_first_use<F, Fut>(build: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = T> + Send + 'static,
    {
        Self {
            value: OnceCell::new(),
            stage: std::sync::Mutex::new(Stage::Waiting(Box::new(move || Box::pin(build())))),
        }
    }

    /// A value that needs no building.
    pub fn ready(value: T) -> Self {
        Self {
            value: OnceCell::new_with(Some(value)),
            stage: std::sync::Mutex::new(Stage::Done),
        }
    }

    /// Starts building the value in a task, if nobody has yet. Cheap when
    /// it has started or is done.
    pub fn start(&self) {
        if self.value.initialized() {
            return;
        }
        let mut stage = self.stage.lock().expect("deferred lock");
        if matches!(*stage, Stage::Waiting(_)) {
            if let Stage::Waiting(build) = std::mem::replace(&mut *stage, Stage::Done) {
                // On the blocking pool: the build may do synchronous work
                // (reading certificate files) that would stall an async
                // worker and whatever the request spawned onto it.
                let runtime = tokio::runtime::Handle::current();
                *stage = Stage::Running(tokio::task::spawn_blocking(move || {
                    runtime.block_on(build())
                }));
            }
        }
    }

    /// The value, starting and waiting for the task the first time. A
    /// caller that stops waiting (its future dropped: a decision answered
    /// before its speculative read finished) leaves the task to the next.
    pub async fn get(&self) -> &T {
        self.start();
        self.value
            .get_or_init(|| async {
                let running =
                    std::mem::replace(&mut *self.stage.lock().expect("deferred lock"), Stage::Done);
                let Stage::Running(task) = running else {
                    unreachable!("a deferred value is started before it is awaited")
                };
                let mut waiting = PutBack {
                    stage: &self.stage,
                    task: Some(task),
                };
                let built = waiting
                    .task
                    .as_mut()
                    .expect("the task is there until it finishes")
                    .await;
                waiting.task = None;
                built.expect("building a deferred value panicked (see the log)")
            })
            .await
    }
}

/// Puts an unfinished build task back when its waiter is dropped.
struct PutBack<'a, T> {
    stage: &'a std::sync::Mutex<Stage<T>>,
    task: Option<JoinHandle<T>>,
}

impl<T> Drop for PutBack<'_, T> {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            *self.stage.lock().expect("deferred lock") = Stage::Running(task);
        }
    }
}

impl<T: Send + 'static> From<T> for Deferred<T> {
    fn from(value: T) -> Self {
        Self::ready(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[tokio::test]
    async fn the_value_is_built_once_on_first_use_and_shared() {
        let builds = Arc::new(AtomicUsize::new(0));
        let counted = builds.clone();
        let deferred = Arc::new(Deferred::on_first_use(move || async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            counted.fetch_add(1, Ordering::SeqCst);
            42
        }));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert_eq!(
            builds.load(Ordering::SeqCst),
            0,
            "nothing runs before first use"
        );
        deferred.start();
        deferred.start();
        let readers: Vec<_> = (0..8)
            .map(|_| {
                let d = deferred.clone();
                tokio::spawn(async move { *d.get().await })
            })
            .collect();
        for r in readers {
            assert_eq!(r.await.unwrap(), 42);
        }
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        assert_eq!(*Deferred::ready(7).get().await, 7);
    }

    /// A waiter dropped while the value is being built (a decision that
    /// answered before its read finished) leaves the build to the next.
    #[tokio::test]
    async fn a_waiter_that_gives_up_leaves_the_build_to_the_next() {
        let deferred = Deferred::on_first_use(|| async {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            7
        });
        let gave_up =
            tokio::time::timeout(std::time::Duration::from_millis(5), deferred.get()).await;
        assert!(gave_up.is_err(), "the build was still running");
        assert_eq!(*deferred.get().await, 7);
    }
}
