// The console's addresses: `#/tenants/<id>` and so on, so that a reload or
// a shared link opens the same screen, and the page itself is one file.
import { useEffect, useState } from 'preact/hooks';

export function useRoute(): string[] {
  const parse = () =>
    location.hash
      .replace(/^#\/?/, '')
      .split('?')[0]
      .split('/')
      .filter(Boolean)
      .map(decodeURIComponent);
  const [parts, setParts] = useState(parse);
  useEffect(() => {
    const changed = () => setParts(parse());
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return parts;
}

export function href(...parts: string[]): string {
  return `#/${parts.map(encodeURIComponent).join('/')}`;
}

/** Moves to another screen (app.tsx then moves the focus to its heading). */
export function go(...parts: string[]): void {
  location.hash = href(...parts);
}
