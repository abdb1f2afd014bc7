import { DefaultExecutionEventBus, resolveUserScope, type ExecutionEventBus, type ExecutionEventBusManager, type ServerCallContext } from '@a2a-js/sdk/server';

/**
 * A bus per execution rather than the SDK's one per task. Two messages on one task can run at once (a buyer
 * resubmitting its payment while the first settles): on a shared bus the quick one's answer would end the other's
 * event queue, whose events would then never reach the task store. Each request here hears its own execution only;
 * a resubscriber or a cancellation follows the oldest one still running (the one doing the work).
 */
export class TaskBusManager implements ExecutionEventBusManager {
  private readonly running = new Map<string, ExecutionEventBus[]>();

  createOrGetByTaskId(taskId: string, context?: ServerCallContext): ExecutionEventBus {
    const key = keyOf(taskId, context);
    const bus = new DefaultExecutionEventBus();
    this.running.set(key, [...(this.running.get(key) ?? []), bus]);
    return bus;
  }

  getByTaskId(taskId: string, context?: ServerCallContext): ExecutionEventBus | undefined {
    return this.running.get(keyOf(taskId, context))?.[0];
  }

  cleanupByTaskId(taskId: string, context?: ServerCallContext): void {
    const key = keyOf(taskId, context);
    for (const bus of this.running.get(key) ?? []) bus.removeAllListeners();
    this.running.delete(key);
  }

  /** Every execution's bus ends with it: a task waiting for a message needs none, and after a restart has none. */
  settleByTaskId(taskId: string, bus: ExecutionEventBus, _lastState: unknown, context: ServerCallContext): boolean {
    bus.finished();
    bus.removeAllListeners();
    const key = keyOf(taskId, context);
    const left = (this.running.get(key) ?? []).filter((b) => b !== bus);
    if (left.length) this.running.set(key, left);
    else this.running.delete(key);
    return true;
  }
}

function keyOf(taskId: string, context: ServerCallContext | undefined): string {
  return JSON.stringify([context?.tenant ?? '', context ? resolveUserScope(context) : '', taskId]);
}
