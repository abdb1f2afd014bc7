// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title Multicall3 (minimal, ABI-compatible subset)
/// @notice Our own small implementation of the Multicall3 entry points that viem and the x402 facilitator
/// use: aggregate3 and tryAggregate, plus a few read helpers. No constructor state and no immutables, so its
/// runtime code can be copied to the canonical address with anvil_setCode.
contract Multicall3 {
    struct Call {
        address target;
        bytes callData;
    }

    struct Call3 {
        address target;
        bool allowFailure;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    function aggregate3(Call3[] calldata calls) external payable returns (Result[] memory returnData) {
        uint256 n = calls.length;
        returnData = new Result[](n);
        for (uint256 i = 0; i < n; ++i) {
            Call3 calldata c = calls[i];
            (bool ok, bytes memory ret) = c.target.call(c.callData);
            if (!ok && !c.allowFailure) revert("Multicall3: call failed");
            returnData[i] = Result(ok, ret);
        }
    }

    function tryAggregate(bool requireSuccess, Call[] calldata calls)
        external
        payable
        returns (Result[] memory returnData)
    {
        uint256 n = calls.length;
        returnData = new Result[](n);
        for (uint256 i = 0; i < n; ++i) {
            (bool ok, bytes memory ret) = calls[i].target.call(calls[i].callData);
            if (requireSuccess && !ok) revert("Multicall3: call failed");
            returnData[i] = Result(ok, ret);
        }
    }

    function getBlockNumber() external view returns (uint256) {
        return block.number;
    }

    function getCurrentBlockTimestamp() external view returns (uint256) {
        return block.timestamp;
    }

    function getChainId() external view returns (uint256) {
        return block.chainid;
    }

    function getEthBalance(address addr) external view returns (uint256) {
        return addr.balance;
    }
}
