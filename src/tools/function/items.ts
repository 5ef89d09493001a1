import { clientCallValidator, validateClientCallOutput } from '../../protocol/item-validation.js';

/** `function_call`: the call the model made (echoed by stateless clients). */
export const validateFunctionCall = clientCallValidator('arguments');

/** `function_call_output`: the client's answer, paired with its call by `call_id`. */
export const validateFunctionCallOutput = validateClientCallOutput;
