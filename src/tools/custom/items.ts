import { clientCallValidator, validateClientCallOutput } from '../../protocol/item-validation.js';

/** `custom_tool_call`: the call the model made, its raw `input` (echoed by stateless clients). */
export const validateCustomToolCall = clientCallValidator('input');

/** `custom_tool_call_output`: the client's answer, paired with its call by `call_id`. */
export const validateCustomToolCallOutput = validateClientCallOutput;
