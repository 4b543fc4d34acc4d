/**
 * The formats of the ids a server hands the worker. A session id becomes a file name (`reports/<id>.json`) and a
 * directory name (`<work dir>/<id>`), so an id that is not of its format is refused before any use: a server that
 * sends `../../victim/precious` is broken or hostile, and the worker treats what it sent as data, never as a path.
 * The worker is a client of its own (it does not import the node's actors); the unit test keeps these in step with
 * the server's (`publicIdPattern` in actors/kinds/session/machine.ts, `randomUUID()` at registration in http/routes/daemon.ts).
 */
export const sessionIdPattern = /^[0-9a-f]{16}$/;
export const workerIdPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const isSessionId = (id: unknown): id is string => typeof id === 'string' && sessionIdPattern.test(id);
export const isWorkerId = (id: unknown): id is string => typeof id === 'string' && workerIdPattern.test(id);
