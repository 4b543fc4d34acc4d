import { readFileSync } from 'node:fs';

/** Linux's value for "no limit": a socket may queue as much unsent data as its send buffer holds. */
const UNSET = 4_294_967_295;
const SYSCTL = '/proc/sys/net/ipv4/tcp_notsent_lowat';

/**
 * The start-up check of decision 0054: an SSE client that stops reading holds, besides the ≤ 256 KiB the node keeps
 * for it, whatever the kernel queued on its socket, up to `net.ipv4.tcp_wmem`'s maximum (4 MiB by default), for as
 * long as it takes to fill (50 s at 80 KB/s). uWS.js gives no access to setsockopt, so only the operator can bound it,
 * with `net.ipv4.tcp_notsent_lowat`. Returns the warning to log when that is unset, nothing when it is set or cannot
 * be read (not Linux, or a sandbox without /proc).
 */
export function notsentLowatWarning(read: () => string = () => readFileSync(SYSCTL, 'utf8')): { value: number; msg: string } | undefined {
  let text: string;
  try {
    text = read();
  } catch {
    return undefined;
  }
  const value = Number(text.trim());
  if (!Number.isSafeInteger(value) || value !== UNSET) return undefined;
  return {
    value,
    msg: 'net.ipv4.tcp_notsent_lowat is unset: an event-stream client that stops reading can hold up to net.ipv4.tcp_wmem\'s '
      + 'maximum in this host\'s kernel (4 MiB by default) before the node sees it; set it (131072 is common) to bound that '
      + '(decision 0054)',
  };
}
