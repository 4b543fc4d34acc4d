/**
 * The href a link to somewhere else may have: an absolute http(s) URL, or null (then the page shows plain text).
 * Provider data reaches these links (incident permalinks); a `javascript:` or `data:` one must never become a
 * clickable href, whatever the server let through or stored before it checked (issue 30, finding 8).
 */
export function webLink(url: string | null | undefined): string | null {
  if (typeof url !== 'string' || url.length > 2000) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : null;
}
