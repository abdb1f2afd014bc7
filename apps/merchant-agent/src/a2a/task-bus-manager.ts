import {
  DefaultExecutionEventBusManager,
  resolveUserScope,
  type ExecutionEventBus,
  type ExecutionEventBusManager,
  type ServerCallContext,
} from '@a2a-js/sdk/server';
import type { TaskState } from '@a2a-js/sdk';

/**
 * The SDK's one bus per task, released only when the last execution on it returns. Two messages on one task can run
 * at once (a buyer resubmitting its payment while the first is settling): the SDK would close the shared bus when
 * the quick one returns, and the events of the one still settling would never reach the task store.
 */
export class TaskBusManager implements ExecutionEventBusManager {
  private readonly buses = new DefaultExecutionEventBusManager();
  private readonly running = new Map<string, number>();

  createOrGetByTaskId(taskId: string, context?: ServerCallContext): ExecutionEventBus {
    const key = keyOf(taskId, context);
    this.running.set(key, (this.running.get(key) ?? 0) + 1);
    return this.buses.createOrGetByTaskId(taskId, context);
  }

  getByTaskId(taskId: string, context?: ServerCallContext): ExecutionEventBus | undefined {
    return this.buses.getByTaskId(taskId, context);
  }

  cleanupByTaskId(taskId: string, context?: ServerCallContext): void {
    this.buses.cleanupByTaskId(taskId, context);
  }

  /** true (kept, settled later) while another execution still runs on the bus; false: the SDK's policy applies. */
  settleByTaskId(taskId: string, _bus: ExecutionEventBus, _lastState: TaskState | undefined, context: ServerCallContext): boolean {
    const key = keyOf(taskId, context);
    const left = (this.running.get(key) ?? 1) - 1;
    if (left > 0) {
      this.running.set(key, left);
      return true;
    }
    this.running.delete(key);
    return false;
  }
}

function keyOf(taskId: string, context: ServerCallContext | undefined): string {
  return JSON.stringify([context?.tenant ?? '', context ? resolveUserScope(context) : '', taskId]);
}
