import type { Deps } from '../../services/deps.js';
import { workflowScheduleAddress } from '../workflow-schedule/actor.js';
import { configureMessage } from '../../services/schedules/service.js';
import { workflowAddress } from './actor.js';
import type { WorkflowMsg, WorkflowView } from './machine.js';

/**
 * A change to a workflow, answered only once what it implies for the workflow's schedule is readable (issue 32
 * item 6; decision 0071). The workflow actor replies before its effects run, so a schedule told afterwards was still
 * `none` (or still `active`) when a client read it right after the answer. When the reply says the change starts,
 * moves or ends a schedule, the schedule actor is asked to apply the deployment and answers once its read model is
 * written, on whichever node owns it. If that ask fails the change still stands (it is durable); the schedule
 * service's scan hands the deployment over within a scan period, as it does after a crash.
 */
export async function changeWorkflow(deps: Pick<Deps, 'ask' | 'log'>, workflowId: string, msg: WorkflowMsg): Promise<WorkflowView> {
  const view = await deps.ask<WorkflowView>(workflowAddress(workflowId), msg);
  const deployment = view.scheduleDeployment;
  if (deployment !== undefined) {
    await deps.ask(workflowScheduleAddress(workflowId), configureMessage(deployment)).catch((err: unknown) => {
      deps.log.warn({ err, workflowId, workflowVersion: deployment.workflowVersion }, 'schedule did not apply the change in time; the scan will hand it over');
    });
  }
  return view;
}
