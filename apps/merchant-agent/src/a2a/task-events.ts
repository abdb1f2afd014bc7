import { randomUUID } from 'node:crypto';
import { Role, type Artifact, type Message, type Part, type Task, type TaskState, type TaskStatus } from '@a2a-js/sdk';

/** Where an agent message belongs: a task (and its context), or only a context for a direct reply. */
export interface MessageScope {
  taskId: string;
  contextId: string;
}

/** An agent message: a text, or the parts of a skill's output. */
export function agentMessage(scope: MessageScope, content: string | Part[], metadata?: Record<string, unknown>, extensions: string[] = []): Message {
  return {
    messageId: randomUUID(),
    contextId: scope.contextId,
    taskId: scope.taskId,
    role: Role.ROLE_AGENT,
    parts: typeof content === 'string' ? [textPart(content)] : content,
    metadata,
    extensions,
    referenceTaskIds: [],
  };
}

export function taskStatus(state: TaskState, message: Message): TaskStatus {
  return { state, message, timestamp: new Date().toISOString() };
}

/**
 * The task as the first event of a turn (the SDK wants a task or a message first, also on follow-ups), its status
 * message added to the history as a status update's is.
 */
export function taskSnapshot(task: Pick<Task, 'id' | 'contextId' | 'history' | 'metadata'>, status: TaskStatus): Task {
  const history = status.message ? [...task.history, status.message] : task.history;
  return { id: task.id, contextId: task.contextId, status, artifacts: [], history, metadata: task.metadata };
}

export function artifact(name: string, part: Part): Artifact {
  return { artifactId: randomUUID(), name, description: '', parts: [part], metadata: undefined, extensions: [] };
}

export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined };
}

export function dataPart(value: unknown): Part {
  return { content: { $case: 'data', value }, mediaType: 'application/json', filename: '', metadata: undefined };
}
