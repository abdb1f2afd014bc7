import type { Part, Task, TaskState } from '@a2a-js/sdk';
import { AgentEvent, type ExecutionEventBus } from '@a2a-js/sdk/server';
import { agentMessage, artifact, taskSnapshot, taskStatus } from './task-events';

/**
 * One turn of one task: what the executor publishes on the task's bus, every agent message stamped with the
 * extensions the caller activated. `start` must come first in a turn (or `reply`, which ends it without a task).
 */
export class TaskTurn {
  constructor(
    readonly task: Pick<Task, 'id' | 'contextId' | 'history' | 'metadata'>,
    private readonly bus: ExecutionEventBus,
    readonly extensions: string[],
  ) {}

  /** The same turn, its task snapshot carrying `metadata` (a skill named on a follow-up). */
  withMetadata(metadata: Task['metadata']): TaskTurn {
    return new TaskTurn({ ...this.task, metadata }, this.bus, this.extensions);
  }

  start(state: TaskState, text: string, metadata?: Record<string, unknown>): void {
    this.bus.publish(AgentEvent.task(taskSnapshot(this.task, taskStatus(state, this.message(text, metadata)))));
  }

  status(state: TaskState, text: string, metadata?: Record<string, unknown>): void {
    const { id: taskId, contextId } = this.task;
    this.bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: taskStatus(state, this.message(text, metadata)), metadata: undefined }));
  }

  artifact(name: string, part: Part): void {
    const { id: taskId, contextId } = this.task;
    this.bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: artifact(name, part), append: false, lastChunk: true, metadata: undefined }));
  }

  /** A message that leaves the task as it is. */
  reply(text: string, metadata?: Record<string, unknown>): void {
    this.bus.publish(AgentEvent.message(this.message(text, metadata)));
  }

  private message(text: string, metadata?: Record<string, unknown>) {
    return agentMessage({ taskId: this.task.id, contextId: this.task.contextId }, text, metadata, this.extensions);
  }
}
