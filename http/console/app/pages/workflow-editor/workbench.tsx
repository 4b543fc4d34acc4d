import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { readDefinition, type ReadDefinition } from './definition-graph.js';
import { WorkflowCanvas } from './workflow-canvas.js';
import { YamlEditor, type ServerProblem } from './yaml-editor.js';

/** How long typing must pause before the canvas is redrawn: a parse and a layout per pause, not per keystroke. */
export const REDRAW_AFTER_MS = 300;

function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

/**
 * The definition beside its drawing: the YAML editor and the canvas, which follows the text once typing pauses. While
 * the text does not parse, the canvas keeps the last graph that did and says so.
 */
export function Workbench({ text, onText, problems, readOnly = false, onSave }: {
  text: string; onText?: (text: string) => void; problems?: readonly ServerProblem[]; readOnly?: boolean; onSave?: () => void;
}) {
  const settled = useDebounced(text, REDRAW_AFTER_MS);
  const read = useMemo(() => readDefinition(settled), [settled]);
  const lastDrawn = useRef<NonNullable<ReadDefinition['graph']>>({ nodes: [], edges: [] });
  if (read.graph) lastDrawn.current = read.graph;
  const graph = read.graph ?? lastDrawn.current;
  return (
    <div class="workbench">
      <section class="workbench-yaml" aria-labelledby="yaml-title">
        <h2 id="yaml-title">Definition</h2>
        <p class="muted small" id="yaml-help">{readOnly ? 'Read only: your role may not edit this workflow.' : 'YAML, checked as you type; the server checks it in full when you save (Ctrl+S or ⌘S). Tab leaves the editor.'}</p>
        <YamlEditor value={text} label="Definition YAML" readOnly={readOnly} {...(onText ? { onChange: onText } : {})} {...(problems ? { problems } : {})} {...(onSave ? { onSave } : {})} />
      </section>
      <section class="workbench-canvas" aria-labelledby="canvas-title">
        <h2 id="canvas-title">Canvas</h2>
        <WorkflowCanvas nodes={graph.nodes} edges={graph.edges} title="The workflow as a graph" {...(read.unreadable ? { stale: read.unreadable } : {})} />
      </section>
    </div>
  );
}
