import type { JsonObject } from '../protocol/responses.js';
import { ToolDeclarationError } from './types.js';

/** Model-visible function names accepted by Chat Completions servers. */
export const FUNCTION_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

export function requireString(obj: JsonObject, key: string, param: string): string {
  const value = obj[key];
  if (typeof value !== 'string' || value.length === 0) {
    throw new ToolDeclarationError(`Missing required parameter: '${param}.${key}'.`, `${param}.${key}`, value === undefined ? 'missing_required_parameter' : 'invalid_type');
  }
  return value;
}

export function optionalString(obj: JsonObject, key: string, param: string): string | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new ToolDeclarationError(`Invalid type for '${param}.${key}': expected a string.`, `${param}.${key}`, 'invalid_type');
  return value;
}

export function optionalBoolean(obj: JsonObject, key: string, param: string): boolean | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new ToolDeclarationError(`Invalid type for '${param}.${key}': expected a boolean.`, `${param}.${key}`, 'invalid_type');
  return value;
}

export function optionalObject(obj: JsonObject, key: string, param: string): JsonObject | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (!isPlainObject(value)) throw new ToolDeclarationError(`Invalid type for '${param}.${key}': expected an object.`, `${param}.${key}`, 'invalid_type');
  return value;
}

export function optionalStringArray(obj: JsonObject, key: string, param: string): string[] | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) {
    throw new ToolDeclarationError(`Invalid type for '${param}.${key}': expected an array of strings.`, `${param}.${key}`, 'invalid_type');
  }
  return value as string[];
}

export function requireFunctionName(obj: JsonObject, param: string): string {
  const name = requireString(obj, 'name', param);
  if (!FUNCTION_NAME_PATTERN.test(name)) {
    throw new ToolDeclarationError(`Invalid '${param}.name': '${name}'. Names must match ^[a-zA-Z0-9_-]{1,64}$.`, `${param}.name`, 'invalid_value');
  }
  return name;
}

export function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
