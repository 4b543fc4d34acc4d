/**
 * `npx troupe worker` (the README's way to start one) runs the worker under `sh -c`, and Debian's sh passes no signal
 * on: a SIGTERM sent to the npx process, which is what a container runtime or a supervisor sends, ends npx and its
 * shell, and the worker ran on, orphaned, never draining. So when npm started this process (`npm_command=exec`), the
 * launcher going away is taken as that SIGTERM: `onGone` is called once, within `everyMs`.
 * Only then: a worker started with `nohup troupe worker &` is meant to outlive the shell that started it.
 * Returns what stops the watch.
 */
export function watchNpxLauncher(env: NodeJS.ProcessEnv, onGone: () => void, everyMs = 500): () => void {
  if (env.npm_command !== 'exec') return () => undefined;
  const launcher = process.ppid;
  const timer = setInterval(() => {
    // An orphan is re-parented (to init or a subreaper): its parent id changes.
    if (process.ppid === launcher) return;
    clearInterval(timer);
    onGone();
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
