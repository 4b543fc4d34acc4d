import { useEffect, useRef } from 'preact/hooks';
import { EditorState, StateEffect } from '@codemirror/state';
import { EditorView, drawSelection, highlightActiveLine, highlightActiveLineGutter, keymap, lineNumbers } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { bracketMatching, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { forceLinting, linter, lintGutter, lintKeymap, type Diagnostic } from '@codemirror/lint';
import { yaml } from '@codemirror/lang-yaml';
import { classHighlighter } from '@lezer/highlight';
import { readDefinition } from './definition-graph.js';
import { rangeOfField } from './yaml-paths.js';

/** A refusal the server gave for the definition: the field it named (`definitionYaml.nodes.1.kind`) and its words. */
export interface ServerProblem { readonly field: string; readonly message: string }

/**
 * The definition YAML in CodeMirror 6. Where the text is not YAML is marked as the person types (the `yaml` parser's
 * positions); the server's refusal from the last save is marked on the line its field path leads to, found again in
 * the current text at every lint, so it stays on its line while lines above it change.
 *
 * The editor lives in a shadow root: CodeMirror injects its base styles at run time, into a `<style>` element when
 * mounted in the document, which the console's CSP (`style-src 'self'`, no inline styles) refuses. In a shadow root
 * it uses a constructed stylesheet instead (CSSOM, which the CSP does not govern), so the policy stays as strict.
 * Tab is not captured (CodeMirror's default), so Tab moves on to the next control and the page stays keyboard-navigable.
 */
export function YamlEditor({ value, onChange, problems, label, readOnly = false, onSave }: {
  value: string; onChange?: (text: string) => void; problems?: readonly ServerProblem[]; label: string; readOnly?: boolean; onSave?: () => void;
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | undefined>(undefined);
  const current = useRef({ onChange, onSave, problems: problems ?? [] });
  current.current = { onChange, onSave, problems: problems ?? [] };

  useEffect(() => {
    const root = host.current!.shadowRoot ?? host.current!.attachShadow({ mode: 'open' });
    const mount = document.createElement('div');
    root.replaceChildren(mount);
    const lint = linter((v) => diagnosticsOf(v.state.doc.toString(), current.current.problems), {
      delay: 250, needsRefresh: (update) => update.transactions.some((tr) => tr.effects.some((e) => e.is(problemsChanged))),
    });
    const created = new EditorView({
      root,
      parent: mount,
      state: EditorState.create({
        doc: value,
        extensions: [
          lineNumbers(), highlightActiveLineGutter(), highlightActiveLine(), drawSelection(), history(), indentOnInput(),
          // Long prompts wrap rather than scroll sideways, which matters most at 375 px.
          bracketMatching(), yaml(), syntaxHighlighting(classHighlighter), lint, lintGutter(), editorTheme, EditorView.lineWrapping,
          // Mod-s saves (the browser's own save-page would be useless here); the rest is CodeMirror's standard keymap.
          keymap.of([{ key: 'Mod-s', preventDefault: true, run: () => { current.current.onSave?.(); return true; } }, ...defaultKeymap, ...historyKeymap, ...lintKeymap]),
          // Read only, the text is still reachable by Tab (to read and scroll it with the keyboard), and is announced as such.
          EditorView.contentAttributes.of(readOnly ? { 'aria-label': label, 'aria-readonly': 'true', tabindex: '0' } : { 'aria-label': label }),
          EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly),
          EditorView.updateListener.of((update) => { if (update.docChanged) current.current.onChange?.(update.state.doc.toString()); }),
        ],
      }),
    });
    view.current = created;
    return () => { created.destroy(); view.current = undefined; };
  }, [label, readOnly]);

  // A new text from outside (a rollback, a proposal opened, a reload) replaces the editor's; typing does not loop back.
  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
  }, [value]);

  // New refusals re-run the lint at once (a lint otherwise runs only after the text changes).
  useEffect(() => {
    const v = view.current;
    if (!v) return;
    v.dispatch({ effects: problemsChanged.of(null) });
    forceLinting(v);
  }, [problems]);

  return <div class="yaml-editor" ref={host} data-yaml-editor="" />;
}

/** Says the server's problems changed, so the linter runs again without a change of text. */
const problemsChanged = StateEffect.define<null>();

function diagnosticsOf(text: string, problems: readonly ServerProblem[]): Diagnostic[] {
  const read = readDefinition(text);
  const out: Diagnostic[] = read.syntax.map((p) => ({
    from: Math.min(p.from, text.length), to: Math.min(p.to, text.length), severity: 'error', source: 'YAML', message: p.message,
  }));
  if (read.syntax.length === 0) {
    for (const p of problems) {
      const at = rangeOfField(read.doc, text, p.field);
      out.push({ from: at.from, to: at.to, severity: 'error', source: 'server', message: p.message });
    }
  }
  return out;
}

/**
 * Colours from the console's own variables (they cross the shadow boundary, being inherited), so the editor follows
 * the light and dark schemes and keeps the contrast axe-core checks; syntax colours are the `tok-*` classes of
 * `classHighlighter`, styled here too.
 */
const editorTheme = EditorView.theme({
  '&': { color: 'var(--text)', backgroundColor: 'var(--panel)', border: '1px solid var(--line)', borderRadius: '6px', height: '26rem', fontSize: '0.9rem' },
  '&.cm-focused': { outline: '3px solid var(--accent)', outlineOffset: '2px' },
  '.cm-scroller': { fontFamily: 'ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace', overflow: 'auto' },
  '.cm-content': { caretColor: 'var(--text)' },
  '.cm-cursor': { borderLeftColor: 'var(--text)' },
  '.cm-gutters': { backgroundColor: 'var(--quiet-bg)', color: 'var(--muted)', borderRight: '1px solid var(--line)' },
  '.cm-activeLine': { backgroundColor: 'color-mix(in srgb, var(--accent) 8%, transparent)' },
  '.cm-activeLineGutter': { backgroundColor: 'color-mix(in srgb, var(--accent) 16%, var(--quiet-bg))', color: 'var(--text)' },
  '&.cm-focused .cm-selectionBackground, .cm-selectionBackground': { backgroundColor: 'color-mix(in srgb, var(--accent) 30%, transparent)' },
  '.cm-tooltip': { backgroundColor: 'var(--panel)', color: 'var(--text)', border: '1px solid var(--line)' },
  '.cm-diagnostic-error': { borderLeftColor: 'var(--bad)' },
  // The lint extension draws its underline and gutter marker as `data:` SVG images, which the CSP (`img-src 'self'`)
  // refuses: the same marks in plain CSS instead.
  '.cm-lintRange-error': { backgroundImage: 'none', textDecoration: 'underline wavy var(--bad)', textUnderlineOffset: '3px' },
  '.cm-lint-marker-error': { content: 'none', boxSizing: 'border-box', width: '0.8em', height: '0.8em', margin: '0.1em', borderRadius: '50%', backgroundColor: 'var(--bad)' },
  '.tok-propertyName, .tok-definition': { color: 'var(--accent)' },
  '.tok-string': { color: 'var(--good)' },
  '.tok-number, .tok-bool, .tok-atom': { color: 'var(--busy)' },
  '.tok-comment': { color: 'var(--muted)', fontStyle: 'italic' },
  '.tok-punctuation, .tok-meta': { color: 'var(--muted)' },
});
