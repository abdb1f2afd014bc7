// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";
import {Permit2} from "./Permit2.sol";

/// @title X402UptoPermit2Proxy
/// @notice Our own contract with the interface of x402's upto Permit2 proxy (canonical address
/// 0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002): the payer signs a Permit2 permit for a maximum with this proxy as the
/// spender and a witness naming the recipient, the one facilitator allowed to settle and a validAfter time; that
/// facilitator later charges any amount up to the maximum, once. Configuration is immutable only, so the runtime code
/// can be placed at the canonical address with anvil_setCode (which copies no storage; the reentrancy guard's slot
/// starting at zero reads as "not entered").
contract X402UptoPermit2Proxy is ReentrancyGuard {
    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    error AmountExceedsPermitted();
    error UnauthorizedFacilitator();
    error InvalidAmount();
    error InvalidOwner();
    error InvalidDestination();
    error PaymentTooEarly();
    error Permit2612AmountMismatch();

    event Settled();
    event SettledWithPermit();
    event EIP2612PermitFailedWithReason(string reason);
    event EIP2612PermitFailedWithPanic(uint256 errorCode);
    event EIP2612PermitFailedWithData(bytes data);

    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)";
    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,address facilitator,uint256 validAfter)");

    Permit2 public immutable PERMIT2;

    constructor(address permit2) {
        PERMIT2 = Permit2(permit2);
    }

    /// @notice Charges `amount` (at most the permitted maximum) from `owner` to `witness.to`.
    function settle(
        Permit2.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        _settle(permit, amount, owner, witness, signature);
        emit Settled();
    }

    /// @notice settle, after first trying the payer's EIP-2612 permit that approves Permit2 (gas-sponsored approval).
    /// A failed permit (already used, or an allowance already there) does not stop the settlement; Permit2 decides.
    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        Permit2.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        if (permit2612.value != permit.permitted.amount) revert Permit2612AmountMismatch();
        try IERC20Permit(permit.permitted.token).permit(
            owner, address(PERMIT2), permit2612.value, permit2612.deadline, permit2612.v, permit2612.r, permit2612.s
        ) {} catch Error(string memory reason) {
            emit EIP2612PermitFailedWithReason(reason);
        } catch Panic(uint256 errorCode) {
            emit EIP2612PermitFailedWithPanic(errorCode);
        } catch (bytes memory data) {
            emit EIP2612PermitFailedWithData(data);
        }
        _settle(permit, amount, owner, witness, signature);
        emit SettledWithPermit();
    }

    function _settle(
        Permit2.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) private {
        if (amount == 0) revert InvalidAmount();
        if (amount > permit.permitted.amount) revert AmountExceedsPermitted();
        if (owner == address(0)) revert InvalidOwner();
        if (witness.to == address(0)) revert InvalidDestination();
        if (block.timestamp < witness.validAfter) revert PaymentTooEarly();
        if (msg.sender != witness.facilitator) revert UnauthorizedFacilitator();
        bytes32 witnessHash = keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.facilitator, witness.validAfter));
        PERMIT2.permitWitnessTransferFrom(
            permit,
            Permit2.SignatureTransferDetails({to: witness.to, requestedAmount: amount}),
            owner,
            witnessHash,
            WITNESS_TYPE_STRING,
            signature
        );
    }
}
